import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Unbiased base62: bytes of 248 and above (4 × 62) are dropped rather than folded onto the alphabet. */
function base62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

/** `ffc_` + 22 base62 characters (about 131 random bits): unguessable, and unique in practice. */
export const newClientId = (): string => `ffc_${base62(22)}`;

/** `ffs_` + 32 random bytes in base64url (43 characters); the prefix lets secret scanners spot leaks. */
export const newClientSecret = (): string => `ffs_${randomBytes(32).toString('base64url')}`;
