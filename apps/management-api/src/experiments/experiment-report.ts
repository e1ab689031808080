import { maritzJarrettSe, momentsOf, newcombeDifference, normalQuantile, welchDifference, type Interval } from './experiment-stats';
import { type FlagArms, variationNamed } from './experiment-variations';
import type { SeriesPoint, VariationFigures } from './experiments.repository';

/** Below these a variation's intervals are shown with a warning: too wide to decide on, or not defined. */
export const MIN_REQUESTS = 100;
export const MIN_LATENCIES = 40;
export const MIN_FEEDBACK = 30;

/** A difference treatment minus control with its 95% interval and the method that made it. */
export interface Difference extends Interval {
  estimate: number;
  method: 'newcombe-hybrid-score' | 'welch-t' | 'maritz-jarrett';
}

export interface VariationReport {
  /** What the ledger recorded (a variation id; null: the route's default, served when the binding could not be evaluated). */
  recorded: string | null;
  variationId: string | null;
  name: string;
  control: boolean;
  requests: number;
  errors: number;
  errorRate: number | null;
  errorsByCode: Record<string, number>;
  inputTokens: number;
  outputTokens: number;
  debit: number;
  costPerRequest: number | null;
  latencyMs: { n: number; p50: number | null; p95: number | null };
  timeToFirstTokenMs: { n: number; p50: number | null; p95: number | null };
  feedback: { n: number; mean: number | null };
  /** Against the control; absent on the control itself and where an arm has too few values for the method. */
  vsControl?: {
    errorRate?: Difference;
    costPerRequest?: Difference;
    latencyP95Ms?: Difference;
    timeToFirstTokenP95Ms?: Difference;
    feedback?: Difference;
  };
}

/** The pieces of a report, read by ExperimentsService; this only computes. */
export interface ReportInput {
  arms: FlagArms | null;
  figures: VariationFigures[];
  latencies: Map<string | null, number[]>;
  firstTokens: Map<string | null, number[]>;
  series: SeriesPoint[];
}

const rate = (x: number, n: number) => (n > 0 ? x / n : null);

/** The per-variation report with its differences against the control and the warnings a reader needs. */
export function buildReport(input: ReportInput): { variations: VariationReport[]; warnings: string[] } {
  const warnings: string[] = [];
  if (!input.arms) warnings.push('The flag does not exist (any more): rows are shown by the variation they recorded, with no control.');
  const controlId = input.arms?.controlId ?? null;
  const identify = (recorded: string | null) => {
    if (recorded === null) return { variationId: null, name: '(route default)' };
    const v = input.arms ? variationNamed(input.arms, recorded) : undefined;
    return v ? { variationId: v.id, name: v.name } : { variationId: null, name: recorded };
  };
  const reports = input.figures.map((f) => {
    const who = identify(f.variation);
    const report: VariationReport = {
      recorded: f.variation,
      ...who,
      control: who.variationId !== null && who.variationId === controlId,
      requests: f.requests,
      errors: f.errors,
      errorRate: rate(f.errors, f.requests),
      errorsByCode: f.errorsByCode,
      inputTokens: f.inputTokens,
      outputTokens: f.outputTokens,
      debit: f.debit,
      costPerRequest: rate(f.debit, f.requests),
      latencyMs: f.latency,
      timeToFirstTokenMs: f.firstToken,
      feedback: { n: f.feedback.n, mean: rate(f.feedback.sum, f.feedback.n) },
    };
    return report;
  });
  const controlIndex = reports.findIndex((r) => r.control);
  if (controlIndex < 0) {
    if (input.arms) warnings.push('The control variation has no completed requests in this range: no differences can be computed.');
    return { variations: reports, warnings };
  }
  const c = input.figures[controlIndex];
  const cr = reports[controlIndex];
  for (const [i, r] of reports.entries()) {
    if (i === controlIndex) continue;
    const f = input.figures[i];
    r.vsControl = compare(f, c, input, warnings, r.name, cr.name);
  }
  return { variations: reports, warnings };
}

function compare(t: VariationFigures, c: VariationFigures, input: ReportInput, warnings: string[], name: string, controlName: string): NonNullable<VariationReport['vsControl']> {
  const out: NonNullable<VariationReport['vsControl']> = {};
  if (t.requests < MIN_REQUESTS || c.requests < MIN_REQUESTS) {
    warnings.push(`${name} vs ${controlName}: ${Math.min(t.requests, c.requests)} requests in the smaller arm; intervals are too wide to decide on below ${MIN_REQUESTS} per variation.`);
  }
  if (t.requests > 0 && c.requests > 0) out.errorRate = { ...newcombeDifference(t.errors, t.requests, c.errors, c.requests), method: 'newcombe-hybrid-score' };
  const cost = welchDifference(momentsOf(t.requests, t.debit, t.debitSquares), momentsOf(c.requests, c.debit, c.debitSquares));
  if (cost) out.costPerRequest = { estimate: cost.estimate, lower: cost.lower, upper: cost.upper, method: 'welch-t' };
  if (t.latency.n < MIN_LATENCIES || c.latency.n < MIN_LATENCIES) {
    warnings.push(`${name} vs ${controlName}: p95 latency rests on ${Math.min(t.latency.n, c.latency.n)} successful requests in the smaller arm (${MIN_LATENCIES} wanted).`);
  }
  const latency = p95Difference(input.latencies, t.variation, c.variation, t.latency, c.latency);
  if (latency) out.latencyP95Ms = latency;
  const ttft = p95Difference(input.firstTokens, t.variation, c.variation, t.firstToken, c.firstToken);
  if (ttft) out.timeToFirstTokenP95Ms = ttft;
  const fb = welchDifference(momentsOf(t.feedback.n, t.feedback.sum, t.feedback.squares), momentsOf(c.feedback.n, c.feedback.sum, c.feedback.squares));
  if (fb) out.feedback = { estimate: fb.estimate, lower: fb.lower, upper: fb.upper, method: 'welch-t' };
  if ((t.feedback.n > 0 || c.feedback.n > 0) && (t.feedback.n < MIN_FEEDBACK || c.feedback.n < MIN_FEEDBACK)) {
    warnings.push(`${name} vs ${controlName}: mean feedback rests on ${Math.min(t.feedback.n, c.feedback.n)} scores in the smaller arm (${MIN_FEEDBACK} wanted).`);
  }
  return out;
}

/**
 * The p95 difference of all rows (the reported p95s) with the Maritz–Jarrett interval of the samples
 * read. Past MAX_LATENCY_SAMPLE rows a variation's sample is smaller than its rows; each standard
 * error, which shrinks as 1/sqrt(n), is then narrowed from its sample's size to the rows'.
 */
function p95Difference(samples: Map<string | null, number[]>, tv: string | null, cv: string | null, t: { n: number; p95: number | null }, c: { n: number; p95: number | null }): Difference | undefined {
  const ts = samples.get(tv) ?? [];
  const cs = samples.get(cv) ?? [];
  const st = maritzJarrettSe(ts, 0.95);
  const sc = maritzJarrettSe(cs, 0.95);
  if (st === undefined || sc === undefined || t.p95 === null || c.p95 === null) return undefined;
  const estimate = t.p95 - c.p95;
  const half = normalQuantile(0.975) * Math.sqrt((st * st * ts.length) / t.n + (sc * sc * cs.length) / c.n);
  return { estimate, lower: estimate - half, upper: estimate + half, method: 'maritz-jarrett' };
}
