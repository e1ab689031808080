/**
 * When to retry and how long to wait: pure functions of the answer's status and headers, so the
 * policy is tested without a server or a clock.
 */

export interface RetrySettings {
  /** First backoff step without a server hint; doubled per retry. */
  baseDelayMs: number;
  /** The longest single wait. A server asking for more is not retried: waiting less would only be refused again. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_SETTINGS: RetrySettings = { baseDelayMs: 500, maxDelayMs: 30_000 };

/** 409s that mean "busy, come back": our own earlier attempt in flight, or another import of the tenant under way. */
const BUSY = /(?:^|\/)problems\/(?:idempotency-in-flight|import-in-progress)$/;

/**
 * 429 (rate limited) and 503 (unavailable) ask the client to come back; a 409 for an
 * Idempotency-Key still in flight means our own earlier attempt is running, and the retry
 * receives its result; a 409 import-in-progress means another import of the tenant runs, and the
 * retry (an import is applied whole or not at all) runs once it ends. Anything else would fail
 * the same way again.
 */
export function isRetryableStatus(status: number, problemType?: string): boolean {
  if (status === 429 || status === 503) return true;
  return status === 409 && problemType !== undefined && BUSY.test(problemType);
}

/** `Retry-After` (RFC 9110 section 10.2.3): delay-seconds or an HTTP-date. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP-date names a weekday; without one Date.parse would accept all sorts of strings.
  if (!/^[A-Za-z]{3},/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** `RateLimit-Reset` (IETF RateLimit header fields draft): seconds until the quota resets. */
export function parseRateLimitReset(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  return /^\d+$/.test(v) ? Number(v) * 1000 : undefined;
}

export function parseNonNegativeInteger(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

/**
 * How long the server asked us to wait: Retry-After first; on a 429 without it, RateLimit-Reset
 * (seconds until the quota frees up).
 */
export function serverRetryHint(status: number, headers: Pick<Headers, 'get'>, nowMs: number): number | undefined {
  const retryAfter = parseRetryAfter(headers.get('retry-after'), nowMs);
  if (retryAfter !== undefined) return retryAfter;
  return status === 429 ? parseRateLimitReset(headers.get('ratelimit-reset')) : undefined;
}

/**
 * Exponential backoff with "equal jitter": half the step fixed, half random, so clients that failed
 * together do not come back together, yet none retries immediately.
 */
export function backoffDelay(retry: number, settings: RetrySettings, random: () => number = Math.random): number {
  const step = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** Math.max(0, retry));
  return Math.round(step / 2 + (step / 2) * random());
}

/**
 * The wait before retry number `retry` (0 for the first), or undefined when the server's hint is
 * longer than one wait may be. A hint is honoured in full plus a little jitter (at most 10 %, at
 * most 1 s), so a crowd of clients told "1 s" does not return in the same millisecond.
 */
export function retryDelay(retry: number, hintMs: number | undefined, settings: RetrySettings, random: () => number = Math.random): number | undefined {
  if (hintMs === undefined) return backoffDelay(retry, settings, random);
  if (hintMs > settings.maxDelayMs) return undefined;
  const jitter = Math.min(1000, hintMs * 0.1) * random();
  return Math.min(settings.maxDelayMs, Math.ceil(hintMs + jitter));
}
