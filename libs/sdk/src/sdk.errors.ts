import type { Problem } from './sdk.types';

/** Everything the SDK throws (except a caller's own abort) is a FlagshipError. */
export class FlagshipError extends Error {
  override name = 'FlagshipError';
}

/** What an answer that was not a success is made of. */
export interface ApiErrorInit {
  status: number;
  problem: Problem;
  requestId: string | undefined;
  method: string;
  /** Path and query of the request; never a token. */
  path: string;
  /** How many requests were sent for this call, retries included. */
  attempts: number;
}

function describe(init: ApiErrorInit): string {
  const where = `${init.method} ${init.path.split('?')[0]}`;
  const detail = init.problem.detail ? `: ${init.problem.detail}` : '';
  const requestId = init.requestId ? `, request id ${init.requestId}` : '';
  return `${init.problem.title}${detail} (HTTP ${init.status} on ${where}${requestId})`;
}

/** The API answered with an error status; `problem` is its RFC 9457 body. */
export class ApiError extends FlagshipError {
  override name = 'ApiError';
  readonly status: number;
  readonly problem: Problem;
  /** The server's x-request-id: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  readonly method: string;
  readonly path: string;
  readonly attempts: number;

  constructor(init: ApiErrorInit, message = describe(init)) {
    super(message);
    this.status = init.status;
    this.problem = init.problem;
    this.requestId = init.requestId;
    this.method = init.method;
    this.path = init.path;
    this.attempts = init.attempts;
  }

  /** The problem type's slug, e.g. `flag-not-found` for `/problems/flag-not-found`. */
  get code(): string | undefined {
    return problemSlug(this.problem.type);
  }

  /** 422: field path -> message. */
  get errors(): Record<string, string> | undefined {
    return this.problem.errors;
  }
}

/** 404 with problem type `/problems/flag-not-found`. */
export class FlagNotFoundError extends ApiError {
  override name = 'FlagNotFoundError';
  /** The key asked for, when the call named one. */
  readonly flagKey: string | undefined;

  constructor(init: ApiErrorInit, flagKey: string | undefined) {
    super(init);
    this.flagKey = flagKey;
  }
}

/**
 * 401 from the API (a missing, bad or expired token), or the token endpoint refusing the client
 * credentials (`oauthError` then holds RFC 6749's `error`, such as `invalid_client`).
 */
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError';
  readonly oauthError: string | undefined;

  constructor(init: ApiErrorInit, oauthError?: string) {
    super(init);
    this.oauthError = oauthError;
  }
}

/** 429 once the retries are spent (or when the server asks for a longer wait than the SDK will make). */
export class RateLimitError extends ApiError {
  override name = 'RateLimitError';
  /** How long the server asked to wait (Retry-After, else RateLimit-Reset). */
  readonly retryAfterMs: number | undefined;
  /** RateLimit-Limit: requests per window. */
  readonly limit: number | undefined;
  /** RateLimit-Remaining. */
  readonly remaining: number | undefined;

  constructor(init: ApiErrorInit, rate: { retryAfterMs?: number; limit?: number; remaining?: number }) {
    super(init);
    this.retryAfterMs = rate.retryAfterMs;
    this.limit = rate.limit;
    this.remaining = rate.remaining;
  }
}

/** No answer: the connection failed or timed out (after the retries, when the call was safe to repeat). */
export class ConnectionError extends FlagshipError {
  override name = 'ConnectionError';
  readonly method: string;
  readonly path: string;
  readonly attempts: number;

  constructor(method: string, path: string, attempts: number, cause: unknown) {
    const reason = cause instanceof Error ? (causeMessage(cause) ?? cause.message) : String(cause);
    super(`No answer from the Flagship API for ${method} ${path.split('?')[0]} after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${reason}`, { cause });
    this.method = method;
    this.path = path;
    this.attempts = attempts;
  }
}

/** fetch's "fetch failed" hides the reason (ECONNREFUSED...) in its cause. */
function causeMessage(err: Error): string | undefined {
  const inner = (err as Error & { cause?: unknown }).cause;
  if (inner instanceof Error) return `${err.message} (${(inner as Error & { code?: string }).code ?? inner.message})`;
  return undefined;
}

/** `flag-not-found` for `/problems/flag-not-found` or an absolute `https://.../problems/flag-not-found`. */
export function problemSlug(type: string): string | undefined {
  const m = /(?:^|\/)problems\/([^/?#]+)$/.exec(type);
  return m?.[1];
}

const STATUS_TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Authentication required',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  412: 'Precondition failed',
  413: 'Request body too large',
  415: 'Unsupported media type',
  422: 'Validation failed',
  429: 'Rate limit exceeded',
  500: 'Internal server error',
  502: 'Bad gateway',
  503: 'Service unavailable',
  504: 'Gateway timeout',
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The problem an error answer carries. A body that is not problem details (a proxy's HTML page, an
 * RFC 6749 token error) becomes an `about:blank` problem, so callers always find the same fields.
 * Other bodies are not echoed: they are not ours and could hold anything.
 */
export function toProblem(status: number, body: unknown, requestId: string | undefined): Problem {
  if (isRecord(body) && typeof body['type'] === 'string' && typeof body['title'] === 'string') {
    const errors = isRecord(body['errors']) ? (body['errors'] as Record<string, string>) : undefined;
    return {
      ...body,
      type: body['type'],
      title: body['title'],
      status: typeof body['status'] === 'number' ? body['status'] : status,
      detail: typeof body['detail'] === 'string' ? body['detail'] : '',
      ...(typeof body['instance'] === 'string' || requestId ? { instance: typeof body['instance'] === 'string' ? body['instance'] : requestId } : {}),
      ...(errors ? { errors } : {}),
    };
  }
  const title = STATUS_TITLES[status] ?? (status >= 500 ? 'Server error' : 'Request error');
  if (isRecord(body) && typeof body['error'] === 'string') {
    // RFC 6749 section 5.2, from the token endpoint.
    const description = typeof body['error_description'] === 'string' ? body['error_description'] : '';
    return { type: 'about:blank', title, status, detail: description ? `${body['error']}: ${description}` : body['error'], ...(requestId ? { instance: requestId } : {}) };
  }
  return { type: 'about:blank', title, status, detail: `The server answered ${status} without problem details.`, ...(requestId ? { instance: requestId } : {}) };
}
