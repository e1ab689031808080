import {
  incompleteBeta,
  maritzJarrettSe,
  momentsOf,
  newcombeDifference,
  normalQuantile,
  quantile,
  quantileDifference,
  studentTQuantile,
  welchDifference,
  wilson,
} from './experiment-stats';

/**
 * Each figure below was computed independently with SciPy 1.17 (scipy.stats.norm/t.ppf,
 * scipy.special.betainc, binomtest(...).proportion_ci(method='wilson'), ttest_ind(equal_var=False)
 * .confidence_interval(), and the Maritz–Jarrett weights written out over scipy.special.betainc);
 * the script is quoted in the README's "Reading an experiment report".
 */
describe('experiment statistics against a SciPy reference', () => {
  it('normal and Student t quantiles, the regularized incomplete beta', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 8);
    expect(normalQuantile(0.025)).toBeCloseTo(-1.959963984540054, 8);
    expect(studentTQuantile(0.975, 7.3)).toBeCloseTo(2.345066736547703, 8);
    expect(studentTQuantile(0.975, 1)).toBeCloseTo(12.706204736174694, 6);
    expect(studentTQuantile(0.025, 30)).toBeCloseTo(-2.042272456301238, 8);
    expect(incompleteBeta(0.3, 2.5, 4)).toBeCloseTo(0.3521975859067672, 12);
  });

  it("Wilson's interval and Newcombe's hybrid score interval for an error-rate difference (12/200 vs 5/250)", () => {
    const w = wilson(12, 200);
    expect(w.lower).toBeCloseTo(0.034652194254331865, 9);
    expect(w.upper).toBeCloseTo(0.10193169295766272, 9);
    const d = newcombeDifference(12, 200, 5, 250);
    expect(d.estimate).toBeCloseTo(0.04, 12);
    expect(d.lower).toBeCloseTo(0.0037204373442364796, 9);
    expect(d.upper).toBeCloseTo(0.08346100141827029, 9);
  });

  it("Welch's interval for a difference of means, from count, sum and sum of squares as SQL returns them", () => {
    const a = [120, 135, 150, 110, 160, 140, 155, 130];
    const b = [100, 98, 105, 110, 95, 102, 99, 101, 97, 103];
    const moments = (xs: number[]) => momentsOf(xs.length, xs.reduce((s, x) => s + x, 0), xs.reduce((s, x) => s + x * x, 0));
    const d = welchDifference(moments(a), moments(b));
    expect(d?.estimate).toBeCloseTo(36.5, 12);
    expect(d?.df).toBeCloseTo(7.699395412622408, 8);
    expect(d?.lower).toBeCloseTo(21.932551311326574, 7);
    expect(d?.upper).toBeCloseTo(51.06744868867342, 7);
    expect(welchDifference(moments([1]), moments(b))).toBeUndefined();
  });

  it('p95 as percentile_disc and the Maritz–Jarrett interval of a p95 difference', () => {
    const x = [115, 156, 161, 188, 206, 212, 214, 246, 247, 253, 258, 269, 269, 296, 301, 308, 315, 318, 321, 321, 352, 359, 367, 382, 394, 397, 398, 404, 416, 425, 426, 427, 436, 462, 468, 482, 515, 571, 628, 686, 788];
    const y = [149, 178, 195, 202, 204, 205, 240, 252, 256, 262, 274, 274, 285, 290, 305, 306, 318, 322, 339, 340, 341, 346, 348, 358, 416, 428, 431, 434, 435, 448, 466, 473, 522, 546, 569, 587, 735];
    expect(quantile(x, 0.95)).toBe(628);
    expect(quantile(y, 0.95)).toBe(587);
    expect(quantile([5, 7], 0.5)).toBe(5);
    expect(quantile([], 0.5)).toBeUndefined();
    expect(maritzJarrettSe(x, 0.95)).toBeCloseTo(88.82319105015623, 6);
    expect(maritzJarrettSe(y, 0.95)).toBeCloseTo(78.80375632810137, 6);
    const d = quantileDifference(x, y, 0.95);
    expect(d?.estimate).toBe(41);
    expect(d?.lower).toBeCloseTo(-191.72945514004607, 5);
    expect(d?.upper).toBeCloseTo(273.72945514004607, 5);
    // Too few values for the beta weights: no interval rather than a made-up one.
    expect(quantileDifference([1, 2], y, 0.95)).toBeUndefined();
  });
});
