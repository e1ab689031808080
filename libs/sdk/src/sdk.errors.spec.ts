import { ApiError, ConnectionError, FlagNotFoundError, FlagshipError, problemSlug, RateLimitError, toProblem } from './sdk.errors';

const call = { method: 'GET', path: '/api/flags/checkout?x=1', attempts: 1 };

describe('toProblem', () => {
  it('keeps a problem body as it came, extensions included', () => {
    const body = { type: '/problems/validation-failed', title: 'Validation failed', status: 422, detail: 'The request has 1 invalid field: key.', instance: 'req-1', errors: { key: 'bad' }, extra: 1 };
    expect(toProblem(422, body, 'req-1')).toEqual(body);
  });

  it('turns an RFC 6749 token error into a problem with its code and description', () => {
    expect(toProblem(401, { error: 'invalid_client', error_description: 'Client authentication failed.' }, 'r')).toEqual({
      type: 'about:blank',
      title: 'Authentication required',
      status: 401,
      detail: 'invalid_client: Client authentication failed.',
      instance: 'r',
    });
  });

  it('never echoes a body that is not ours (a proxy page)', () => {
    const p = toProblem(502, '<html>secret-ish proxy page</html>', undefined);
    expect(p).toEqual({ type: 'about:blank', title: 'Bad gateway', status: 502, detail: 'The server answered 502 without problem details.' });
  });
});

describe('problemSlug', () => {
  it('reads relative and absolute problem types', () => {
    expect(problemSlug('/problems/flag-not-found')).toBe('flag-not-found');
    expect(problemSlug('https://flags.example.com/problems/rate-limited')).toBe('rate-limited');
    expect(problemSlug('about:blank')).toBeUndefined();
  });
});

describe('error classes', () => {
  const problem = { type: '/problems/flag-not-found', title: 'Flag not found', status: 404, detail: 'No flag "checkout".', instance: 'req-9' };

  it('form a hierarchy callers can catch at any level', () => {
    const err = new FlagNotFoundError({ ...call, status: 404, problem, requestId: 'req-9' }, 'checkout');
    expect([err instanceof FlagNotFoundError, err instanceof ApiError, err instanceof FlagshipError, err instanceof Error]).toEqual([true, true, true, true]);
    expect([err.name, err.status, err.code, err.flagKey, err.requestId]).toEqual(['FlagNotFoundError', 404, 'flag-not-found', 'checkout', 'req-9']);
  });

  it('say what failed, where, and the request id, without the query string', () => {
    const err = new ApiError({ ...call, status: 404, problem, requestId: 'req-9' });
    expect(err.message).toBe('Flag not found: No flag "checkout". (HTTP 404 on GET /api/flags/checkout, request id req-9)');
  });

  it('carry the rate-limit numbers', () => {
    const err = new RateLimitError({ ...call, status: 429, problem: { ...problem, status: 429 }, requestId: undefined }, { retryAfterMs: 21_000, limit: 3, remaining: 0 });
    expect([err.retryAfterMs, err.limit, err.remaining, err instanceof ApiError]).toEqual([21_000, 3, 0, true]);
  });

  it('name the low-level reason of a connection failure', () => {
    const cause = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    const err = new ConnectionError('POST', '/api/flags?x=1', 4, cause);
    expect(err.message).toBe('No answer from the Flagship API for POST /api/flags after 4 attempts: fetch failed (ECONNREFUSED)');
    expect(err.cause).toBe(cause);
  });
});
