import {
  backoffDelay,
  DEFAULT_RETRY_SETTINGS,
  isRetryableStatus,
  parseRateLimitReset,
  parseRetryAfter,
  retryDelay,
  serverRetryHint,
} from './retry-policy';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const settings = { baseDelayMs: 500, maxDelayMs: 30_000 };

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('7', NOW)).toBe(7000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });

  it('reads an HTTP-date as the time left until then', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:12 GMT', NOW)).toBe(12_000);
  });

  it('treats an HTTP-date in the past as "now"', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:59:00 GMT', NOW)).toBe(0);
  });

  it('ignores what is neither', () => {
    expect(parseRetryAfter(null, NOW)).toBeUndefined();
    expect(parseRetryAfter('-3', NOW)).toBeUndefined();
    expect(parseRetryAfter('1.5', NOW)).toBeUndefined();
    expect(parseRetryAfter('soon', NOW)).toBeUndefined();
    expect(parseRetryAfter('2026-03-01', NOW)).toBeUndefined();
  });
});

describe('parseRateLimitReset', () => {
  it('reads seconds until the quota resets', () => {
    expect(parseRateLimitReset('42')).toBe(42_000);
    expect(parseRateLimitReset('x')).toBeUndefined();
    expect(parseRateLimitReset(null)).toBeUndefined();
  });
});

describe('serverRetryHint', () => {
  it('prefers Retry-After over RateLimit-Reset', () => {
    expect(serverRetryHint(429, new Headers({ 'retry-after': '3', 'ratelimit-reset': '40' }), NOW)).toBe(3000);
  });

  it('falls back to RateLimit-Reset on a 429 only', () => {
    const headers = new Headers({ 'ratelimit-reset': '40' });
    expect(serverRetryHint(429, headers, NOW)).toBe(40_000);
    // On other answers RateLimit-Reset is the end of the window, not a request to wait.
    expect(serverRetryHint(503, headers, NOW)).toBeUndefined();
  });
});

describe('isRetryableStatus', () => {
  it('retries 429 and 503, and the 409 of our own key still in flight', () => {
    expect(isRetryableStatus(429)).toBe(true);
    expect(isRetryableStatus(503)).toBe(true);
    expect(isRetryableStatus(409, '/problems/idempotency-in-flight')).toBe(true);
    expect(isRetryableStatus(409, '/problems/import-in-progress')).toBe(true);
  });

  it('does not retry answers that would fail the same way again', () => {
    for (const status of [400, 401, 403, 404, 412, 422, 500, 502]) expect([status, isRetryableStatus(status)]).toEqual([status, false]);
    expect(isRetryableStatus(409, '/problems/flag-exists')).toBe(false);
    expect(isRetryableStatus(409)).toBe(false);
  });
});

describe('backoffDelay', () => {
  it('doubles per retry, half fixed and half random', () => {
    expect([0, 1, 2, 3].map((r) => backoffDelay(r, settings, () => 0))).toEqual([250, 500, 1000, 2000]);
    expect([0, 1, 2, 3].map((r) => backoffDelay(r, settings, () => 1))).toEqual([500, 1000, 2000, 4000]);
  });

  it('never waits longer than the cap', () => {
    expect(backoffDelay(20, settings, () => 1)).toBe(30_000);
    expect(backoffDelay(20, settings, () => 0)).toBe(15_000);
  });
});

describe('retryDelay', () => {
  it('honours the server hint in full, with at most 10 % (and 1 s) of jitter on top', () => {
    expect(retryDelay(0, 2000, settings, () => 0)).toBe(2000);
    expect(retryDelay(0, 2000, settings, () => 1)).toBe(2200);
    expect(retryDelay(0, 20_000, settings, () => 1)).toBe(21_000);
  });

  it('backs off exponentially without a hint', () => {
    expect(retryDelay(2, undefined, settings, () => 0)).toBe(1000);
  });

  it('gives up when the server asks for more than one wait may be', () => {
    expect(retryDelay(0, 45_000, settings)).toBeUndefined();
    expect(retryDelay(0, 30_000, settings, () => 1)).toBe(30_000);
  });

  it('has defaults of 500 ms doubling up to 30 s', () => {
    expect(DEFAULT_RETRY_SETTINGS).toEqual({ baseDelayMs: 500, maxDelayMs: 30_000 });
  });
});
