import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (secret: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> =>
  new Promise((resolve, reject) => scryptCb(secret, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));

/** scrypt's cost parameters; a hash records the ones it was made with, and is checked with those. */
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/** The cost outside tests: N=2^14, r=8, p=1 (about 50 ms here): slow enough to make offline guessing expensive. */
export const SCRYPT_COST: ScryptCost = { N: 16384, r: 8, p: 1 };

/** A slow, salted hash of a secret or password: `scrypt$N$r$p$salt$hash` (base64url parts). */
export async function hashSecret(secret: string, cost: ScryptCost = SCRYPT_COST): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(secret, salt, 32, { ...cost, maxmem: 64 * 1024 * 1024 });
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Constant-time check of a secret against `hashSecret`'s output; false for any malformed hash. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return false;
  const expected = Buffer.from(parts[5], 'base64url');
  const actual = await scrypt(secret, Buffer.from(parts[4], 'base64url'), expected.length, { N, r, p, maxmem: 64 * 1024 * 1024 });
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/**
 * A hash to spend the same time on when there is nothing to compare against (unknown client or
 * account), so response time does not tell whether it exists: at the cost real hashes are made with.
 */
export function dummySecretHash(cost: ScryptCost = SCRYPT_COST): string {
  return ['scrypt', cost.N, cost.r, cost.p, 'AAAAAAAAAAAAAAAAAAAAAA', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'].join('$');
}
