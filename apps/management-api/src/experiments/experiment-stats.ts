/**
 * The statistics of the experiment report and the guarded rollout (README "Reading an experiment
 * report"), pure functions over plain numbers so a unit spec can hold them to a reference computed
 * independently (scipy):
 * - a difference of proportions (error rate): Newcombe's hybrid score interval (his method 10), built
 *   from the two Wilson score intervals;
 * - a difference of means (cost per request, feedback): Welch's t interval with the
 *   Welch–Satterthwaite degrees of freedom;
 * - a difference of quantiles (p95 latency): each quantile is the order statistic X(ceil(qn)) (what
 *   Postgres' percentile_disc returns), its standard error the Maritz–Jarrett estimate, and the
 *   difference's interval the normal one over the two independent standard errors.
 * Every interval is two-sided at 95% unless another level is passed.
 */

export interface Interval {
  lower: number;
  upper: number;
}

/** z such that P(Z <= z) = p: Acklam's rational approximation (relative error < 1.2e-9). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError('p must be in (0, 1)');
  const a = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
  const b = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
  const c = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const low = 0.02425;
  let x: number;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - low) {
    const q = p - 0.5;
    const r = q * q;
    x = ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const q = Math.sqrt(-2 * Math.log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  return x;
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error < 1e-15). */
export function logGamma(x: number): number {
  const g = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const xx = x - 1;
  let a = g[0];
  const t = xx + 7.5;
  for (let i = 1; i < 9; i++) a += g[i] / (xx + i);
  return 0.5 * Math.log(2 * Math.PI) + (xx + 0.5) * Math.log(t) - t + Math.log(a);
}

/** The regularized incomplete beta function I_x(a, b) (Lentz's continued fraction, Numerical Recipes' betacf). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  if (x < (a + 1) / (a + b + 2)) return (front * betaFraction(x, a, b)) / a;
  return 1 - (front * betaFraction(1 - x, b, a)) / b;
}

function betaFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10_000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 3e-16) break;
  }
  return h;
}

/** P(T <= t) for Student's t with `df` degrees of freedom (df may be fractional, as Welch's is). */
export function studentTCdf(t: number, df: number): number {
  const tail = 0.5 * incompleteBeta(df / (df + t * t), df / 2, 0.5);
  return t >= 0 ? 1 - tail : tail;
}

/** t such that P(T <= t) = p, by bisection on the CDF (to 1e-12). */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError('p must be in (0, 1)');
  if (!Number.isFinite(df) || df > 1e7) return normalQuantile(p);
  let lo = -1;
  let hi = 1;
  while (studentTCdf(lo, df) > p) lo *= 2;
  while (studentTCdf(hi, df) < p) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 1e-12 * Math.max(1, Math.abs(hi)); i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

const zOf = (level: number) => normalQuantile(1 - (1 - level) / 2);

/** Wilson's score interval for a proportion of `successes` in `n` (n > 0). */
export function wilson(successes: number, n: number, level = 0.95): Interval {
  const z = zOf(level);
  const p = successes / n;
  const denom = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denom;
  return { lower: Math.max(0, centre - half), upper: Math.min(1, centre + half) };
}

/** Newcombe's hybrid score interval for p1 - p2 (treatment minus control). */
export function newcombeDifference(x1: number, n1: number, x2: number, n2: number, level = 0.95): Interval & { estimate: number } {
  const p1 = x1 / n1;
  const p2 = x2 / n2;
  const a = wilson(x1, n1, level);
  const b = wilson(x2, n2, level);
  const estimate = p1 - p2;
  return {
    estimate,
    lower: estimate - Math.sqrt((p1 - a.lower) ** 2 + (b.upper - p2) ** 2),
    upper: estimate + Math.sqrt((a.upper - p1) ** 2 + (p2 - b.lower) ** 2),
  };
}

/** Count, mean and unbiased variance of a sample, the sufficient figures of Welch's interval. */
export interface Moments {
  n: number;
  mean: number;
  variance: number;
}

/** The moments of a sample given its count, sum and sum of squares (as SQL aggregates return them). */
export function momentsOf(n: number, sum: number, sumOfSquares: number): Moments {
  const mean = n > 0 ? sum / n : 0;
  const variance = n > 1 ? Math.max(0, (sumOfSquares - n * mean * mean) / (n - 1)) : 0;
  return { n, mean, variance };
}

/** Welch's t interval for mean1 - mean2 (treatment minus control); undefined below two values per arm. */
export function welchDifference(a: Moments, b: Moments, level = 0.95): (Interval & { estimate: number; df: number }) | undefined {
  if (a.n < 2 || b.n < 2) return undefined;
  const va = a.variance / a.n;
  const vb = b.variance / b.n;
  const estimate = a.mean - b.mean;
  const se = Math.sqrt(va + vb);
  if (se === 0) return { estimate, lower: estimate, upper: estimate, df: a.n + b.n - 2 };
  const df = (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1));
  const t = studentTQuantile(1 - (1 - level) / 2, df);
  return { estimate, lower: estimate - t * se, upper: estimate + t * se, df };
}

/** The 1-based rank of the q-quantile among n sorted values: ceil(q n), as percentile_disc. */
export const quantileRank = (q: number, n: number): number => Math.min(n, Math.max(1, Math.ceil(q * n - 1e-9)));

/** The q-quantile of ascending `sorted` values (percentile_disc); undefined when empty. */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  return sorted.length === 0 ? undefined : sorted[quantileRank(q, sorted.length) - 1];
}

/**
 * The Maritz–Jarrett standard error of the order statistic X(m), m = ceil(q n), of ascending
 * `sorted` values: with W_i = I_{i/n}(m-1, n-m) - I_{(i-1)/n}(m-1, n-m), C_k = Σ W_i X(i)^k,
 * se = sqrt(C2 - C1²). Undefined where the beta weights are not defined (m = 1 or m = n).
 */
export function maritzJarrettSe(sorted: readonly number[], q: number): number | undefined {
  const n = sorted.length;
  const m = quantileRank(q, n);
  const a = m - 1;
  const b = n - m;
  if (a <= 0 || b <= 0) return undefined;
  let c1 = 0;
  let c2 = 0;
  let previous = 0;
  for (let i = 1; i <= n; i++) {
    const cdf = incompleteBeta(i / n, a, b);
    const w = cdf - previous;
    previous = cdf;
    c1 += w * sorted[i - 1];
    c2 += w * sorted[i - 1] ** 2;
  }
  return Math.sqrt(Math.max(0, c2 - c1 * c1));
}

/** The interval of quantile(treatment) - quantile(control): normal, over the two Maritz–Jarrett standard errors. */
export function quantileDifference(treatment: readonly number[], control: readonly number[], q: number, level = 0.95): (Interval & { estimate: number }) | undefined {
  const qa = quantile(treatment, q);
  const qb = quantile(control, q);
  const sa = maritzJarrettSe(treatment, q);
  const sb = maritzJarrettSe(control, q);
  if (qa === undefined || qb === undefined || sa === undefined || sb === undefined) return undefined;
  const estimate = qa - qb;
  const half = zOf(level) * Math.sqrt(sa * sa + sb * sb);
  return { estimate, lower: estimate - half, upper: estimate + half };
}
