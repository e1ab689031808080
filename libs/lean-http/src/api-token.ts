import type { IncomingHttpHeaders } from 'node:http';

export type TokenCheck = 'ok' | 'missing' | 'invalid';

/**
 * The keys callers present, as `Authorization: Bearer <key>` or `X-API-Key: <key>` (OFREP names
 * both), each standing for what it grants (`T`), compared in constant time: the time taken depends
 * neither on how much of a key a guess gets right, nor on its length, nor on which key it matches
 * (every key is compared, none is skipped once one matched). It depends on the number of keys only.
 *
 * The comparison is a branch-free loop over the expected key's UTF-16 code units, reading the
 * guess at `i % its length` so that every read is in bounds whatever the guess's length, OR-ing the
 * differences together with the difference of the lengths; nothing exits early. Hashing both sides or
 * crypto.timingSafeEqual on a scratch buffer cost several times more per request (docs/decisions/2026-11-29-serving-loop-costs.md).
 */
export class ApiKeys<T> {
  private readonly entries: ReadonlyArray<readonly [string, T]>;

  constructor(entries: Iterable<readonly [key: string, grants: T]>) {
    this.entries = [...entries];
    if (this.entries.length === 0) throw new Error('at least one API key is needed');
    if (this.entries.some(([key]) => key === '')) throw new Error('an API key must not be empty');
  }

  /** What the request's key grants; 'missing' without one, 'invalid' when it is none of the keys. */
  check(headers: IncomingHttpHeaders): T | 'missing' | 'invalid' {
    const presented = presentedToken(headers);
    if (presented === undefined) return 'missing';
    return this.match(presented) ?? 'invalid';
  }

  /** What `presented` grants, comparing it with every key. */
  match(presented: string): T | undefined {
    let found: T | undefined;
    for (const [key, grants] of this.entries) if (constantTimeEqual(key, presented)) found = grants;
    return found;
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

/** The key of `Authorization: Bearer <key>`, else of `X-API-Key`; undefined when neither holds one. */
export function presentedToken(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (authorization !== undefined && authorization.length > 7 && (authorization.startsWith('Bearer ') || authorization.slice(0, 7).toLowerCase() === 'bearer ')) {
    const token = authorization.slice(7).trim();
    if (token !== '') return token;
  }
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey !== '') return apiKey;
  return undefined;
}
