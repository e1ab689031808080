/**
 * Semantic versions as LaunchDarkly's semVer* operators read them: SemVer 2.0.0, except that a
 * missing minor or patch is padded with zeros (`1` -> `1.0.0`, `1.2-rc` -> `1.2.0-rc`). A leading `v`,
 * leading zeros, surrounding spaces and a fourth component are refused. Build metadata is parsed
 * and ignored when comparing, as SemVer says.
 */
export interface SemVer {
  /** Numeric identifiers are kept as digit strings so arbitrarily large ones compare exactly. */
  readonly major: string;
  readonly minor: string;
  readonly patch: string;
  readonly prerelease: readonly string[];
  readonly prereleaseNumeric: readonly boolean[];
  /** `major.minor.patch[-prerelease]`: equal keys <=> equal precedence. */
  readonly key: string;
}

const NUM = '0|[1-9]\\d*';
const PRE_ID = `(?:${NUM}|\\d*[a-zA-Z-][0-9a-zA-Z-]*)`;
const STRICT = new RegExp(
  `^(${NUM})\\.(${NUM})\\.(${NUM})(?:-(${PRE_ID}(?:\\.${PRE_ID})*))?(?:\\+[0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*)?$`,
);
const LEADING_COMPONENTS = /^\d+(\.\d+)?(\.\d+)?/;
const DIGITS = /^\d+$/;
/** Same cap as the npm `semver` package: a version string is short; a long one is not worth parsing. */
const MAX_LENGTH = 256;

/**
 * Context attributes holding versions repeat a lot (app versions), and parsing costs a regex match
 * and a few allocations, so parsed versions are memoised in a small bounded cache.
 */
const CACHE_LIMIT = 1024;
const cache = new Map<string, SemVer | null>();

export function parseSemVer(input: unknown): SemVer | undefined {
  if (typeof input !== 'string' || input.length > MAX_LENGTH) return undefined;
  const cached = cache.get(input);
  if (cached !== undefined) return cached ?? undefined;
  const parsed = parseUncached(input);
  // Dropping everything when full keeps this O(1) and is fine for a cache of a few hot values.
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(input, parsed ?? null);
  return parsed;
}

function parseUncached(input: string): SemVer | undefined {
  let m = STRICT.exec(input);
  if (m === null) {
    const lead = LEADING_COMPONENTS.exec(input);
    if (lead === null) return undefined;
    let padded = lead[0];
    if (lead[1] === undefined) padded += '.0';
    if (lead[2] === undefined) padded += '.0';
    m = STRICT.exec(padded + input.slice(lead[0].length));
    if (m === null) return undefined;
  }
  const major = m[1] as string;
  const minor = m[2] as string;
  const patch = m[3] as string;
  const pre = m[4];
  const prerelease = pre === undefined ? [] : pre.split('.');
  // Frozen: cached instances are shared.
  return Object.freeze({
    major,
    minor,
    patch,
    prerelease: Object.freeze(prerelease),
    prereleaseNumeric: Object.freeze(prerelease.map((id) => DIGITS.test(id))),
    key: pre === undefined ? `${major}.${minor}.${patch}` : `${major}.${minor}.${patch}-${pre}`,
  });
}

/** Compares digit strings without leading zeros. */
function compareNumeric(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** SemVer 2.0.0 precedence: negative, zero or positive. */
export function compareSemVer(a: SemVer, b: SemVer): number {
  const c = compareNumeric(a.major, b.major) || compareNumeric(a.minor, b.minor) || compareNumeric(a.patch, b.patch);
  if (c !== 0) return c;
  const pa = a.prerelease;
  const pb = b.prerelease;
  // A version without prerelease ranks above any prerelease of it.
  if (pa.length === 0 || pb.length === 0) return pb.length - pa.length;
  const n = Math.min(pa.length, pb.length);
  for (let i = 0; i < n; i++) {
    const x = pa[i] as string;
    const y = pb[i] as string;
    const xn = a.prereleaseNumeric[i] === true;
    const yn = b.prereleaseNumeric[i] === true;
    let d: number;
    if (xn && yn) d = compareNumeric(x, y);
    else if (xn !== yn) d = xn ? -1 : 1; // numeric identifiers rank below alphanumeric ones
    else d = x < y ? -1 : x > y ? 1 : 0; // ASCII order
    if (d !== 0) return d;
  }
  return pa.length - pb.length;
}
