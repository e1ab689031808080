/**
 * Rollout weights as the console edits them: integers summing to 100,000 (LaunchDarkly's scale, so
 * 0.001% steps), shown as percentages. The API takes relative weights; keeping the sum at 100,000
 * means what the user reads is what contexts get.
 */
export const WEIGHT_TOTAL = 100_000;

export const toPercent = (weight: number): number => Math.round(weight) / (WEIGHT_TOTAL / 100);
export const fromPercent = (percent: number): number => Math.round(Math.min(100, Math.max(0, percent)) * (WEIGHT_TOTAL / 100));

/** Spread `total` over slots in proportion to `shares` (equally when they are all 0), in integers, by largest remainder. */
function apportion(total: number, shares: number[]): number[] {
  if (shares.length === 0) return [];
  const sum = shares.reduce((s, w) => s + Math.max(0, w), 0);
  const exact = shares.map((w) => (sum > 0 ? (Math.max(0, w) / sum) * total : total / shares.length));
  const out = exact.map(Math.floor);
  let left = total - out.reduce((s, w) => s + w, 0);
  const byRemainder = exact.map((e, i) => ({ i, r: e - Math.floor(e) })).sort((a, b) => b.r - a.r || a.i - b.i);
  for (const { i } of byRemainder) {
    if (left <= 0) break;
    out[i]! += 1;
    left -= 1;
  }
  return out;
}

/** Relative weights (any scale) as integers summing to WEIGHT_TOTAL; all zero stays all zero. */
export function normalizeWeights(weights: number[]): number[] {
  if (weights.every((w) => !(w > 0))) return weights.map(() => 0);
  return apportion(WEIGHT_TOTAL, weights);
}

/** Equal slices, the first ones one unit larger when they do not divide evenly. */
export const evenWeights = (n: number): number[] => apportion(WEIGHT_TOTAL, Array.from({ length: n }, () => 1));

/**
 * Slot `index` set to `percent`; the others give or take the difference in proportion to what they
 * hold (equally when they hold nothing), so the total stays 100%.
 */
export function setWeight(weights: number[], index: number, percent: number): number[] {
  if (weights.length <= 1) return weights.map(() => WEIGHT_TOTAL);
  const mine = fromPercent(percent);
  const others = weights.map((w, i) => (i === index ? -1 : w)).filter((w) => w >= 0);
  const rest = apportion(WEIGHT_TOTAL - mine, others);
  const out: number[] = [];
  let k = 0;
  for (let i = 0; i < weights.length; i++) out.push(i === index ? mine : rest[k++]!);
  return out;
}

export const sumWeights = (weights: number[]): number => weights.reduce((s, w) => s + w, 0);
