import * as crypto from 'node:crypto';

/**
 * LaunchDarkly's bucketing, so a context keeps its bucket when a flag migrates between the two
 * systems: SHA-1 of `{flagKey}.{salt}.{value}` (or `{seed}.{value}`), the first 15 hex digits as an
 * integer, divided by 0xFFFFFFFFFFFFFFF. The result is in [0, 1].
 */

type OneShotHash = (algorithm: string, data: string, outputEncoding: 'hex') => string;
// crypto.hash (Node >= 20.12) is faster than createHash for short inputs (no Hash object); a development
// machine may still run an older Node than engines' 24, and @types/node here predates it, hence the
// feature test.
const oneShotHash = (crypto as unknown as { hash?: OneShotHash }).hash;
const sha1Hex: (input: string) => string =
  typeof oneShotHash === 'function'
    ? (input) => oneShotHash('sha1', input, 'hex')
    : (input) => crypto.createHash('sha1').update(input).digest('hex');

/**
 * LaunchDarkly divides by the literal 0xFFFFFFFFFFFFFFF, which a double rounds to exactly 2^60;
 * writing 2^60 gives bit-identical buckets without a lossy literal.
 */
const LONG_SCALE = 2 ** 60;

/** The bucket of a complete hash input. */
export function bucketOfHashInput(input: string): number {
  return parseInt(sha1Hex(input).substring(0, 15), 16) / LONG_SCALE;
}

/** Strings are hashed as they are, integers as their decimal string; anything else cannot be bucketed. */
export function bucketableString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return String(value);
  return undefined;
}

/** The hash input before the value: `{seed}.` when a seed is set and non-zero, else `{flagKey}.{salt}.`. */
export function hashPrefix(flagKey: string, salt: string, seed?: number): string {
  return typeof seed === 'number' && Number.isFinite(seed) && seed !== 0 ? `${seed}.` : `${flagKey}.${salt}.`;
}

/**
 * The bucket in [0, 1] of `value` for a flag. Values that are neither strings nor integers (and a
 * missing value) get bucket 0, as in LaunchDarkly, so they land in the first non-empty slice.
 */
export function bucketValue(flagKey: string, salt: string, value: unknown, seed?: number): number {
  const s = bucketableString(value);
  return s === undefined ? 0 : bucketOfHashInput(hashPrefix(flagKey, salt, seed) + s);
}
