import type { IncomingHttpHeaders } from 'node:http';

export type TokenCheck = 'ok' | 'missing' | 'invalid';

/**
 * The one token callers present, as `Authorization: Bearer <token>` or `X-API-Key: <token>` (OFREP
 * names both), compared in constant time: the time taken depends neither on how much of the token
 * a guess gets right nor on its length.
 *
 * The comparison is a branch-free loop over the expected token's UTF-16 code units, reading the
 * guess at `i % its length` so that every read is in bounds whatever the guess's length, OR-ing the
 * differences together with the difference of the lengths; nothing exits early. Two earlier versions
 * were measured in the serving loop (tools/bench/orep.ts): SHA-256 of both sides cost about 5 µs
 * per request (OpenSSL 3 sets up a digest context per call), and crypto.timingSafeEqual on a scratch
 * buffer about 1 to 2 µs (fill, UTF-8 write, a call into C++), against a fraction of that here.
 */
export class ApiTokenVerifier {
  constructor(private readonly expected: string) {
    if (expected === '') throw new Error('the API token must not be empty');
  }

  check(headers: IncomingHttpHeaders): TokenCheck {
    const presented = presentedToken(headers);
    if (presented === undefined) return 'missing';
    return this.matches(presented) ? 'ok' : 'invalid';
  }

  matches(presented: string): boolean {
    return constantTimeEqual(this.expected, presented);
  }
}

/** Whether `guess` equals `secret`, in time that depends on `secret`'s length only. `guess` may be ''. */
export function constantTimeEqual(secret: string, guess: string): boolean {
  const n = secret.length;
  const m = guess.length;
  let diff = n ^ m;
  if (m === 0) return false; // nothing to compare; the length alone says no (and n > 0)
  for (let i = 0; i < n; i++) diff |= secret.charCodeAt(i) ^ guess.charCodeAt(i % m);
  return diff === 0;
}

function presentedToken(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined && authorization.length > 7 && (authorization.startsWith('Bearer ') || authorization.slice(0, 7).toLowerCase() === 'bearer ')) {
    const token = authorization.slice(7).trim();
    if (token !== '') return token;
  }
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey !== '') return apiKey;
  return undefined;
}
