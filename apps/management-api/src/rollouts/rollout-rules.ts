import { momentsOf, newcombeDifference, quantile, quantileDifference, welchDifference } from '../experiments/experiment-stats';

/** A binding's rollout plan (CONTRACT.md section 11), as gateway_bindings.rollout_plan holds it. */
export interface RolloutPlan {
  stages: Array<{ percent: number; minRequests?: number; minMinutes?: number }>;
  /** Increases over the control the treatment may show: error rate (0..1, absolute), p95 latency (ms), mean cost per request (micro-credits). */
  guards: { errorRate?: number; p95LatencyMs?: number; costPerRequest?: number };
  /** The variation rolled out (id or name); absent: the first variation that is not the control. */
  treatment?: string;
  /** A paused plan writes nothing more. */
  paused?: boolean;
}

/** What the treatment and the control did since the current stage began. */
export interface ArmFigures {
  requests: number;
  errors: number;
  /** Succeeded requests' total latencies, ascending. */
  latencies: number[];
  debit: number;
  debitSquares: number;
}

export type Decision =
  | { kind: 'advance'; stage: number; percent: number; reason: string; figures: DecisionFigures }
  | { kind: 'complete'; reason: string; figures: DecisionFigures }
  | { kind: 'hold'; reason: string; figures: DecisionFigures }
  | { kind: 'rollback'; reason: string; figures: DecisionFigures };

export interface DecisionFigures {
  control: ArmSummary;
  treatment: ArmSummary;
  differences: {
    errorRate?: Bounds;
    p95LatencyMs?: Bounds;
    costPerRequest?: Bounds;
  };
}
interface ArmSummary {
  requests: number;
  errorRate: number | null;
  p95LatencyMs: number | null;
  costPerRequest: number | null;
}
interface Bounds {
  estimate: number;
  lower: number;
  upper: number;
}

/** Per arm, the requests below which no guard is judged crossed (an interval over fewer is not evidence). */
export const MIN_ARM_REQUESTS = 10;
export const MAX_STAGES = 20;

/** Why a plan cannot run, or undefined: stages of ascending percents in (0, 100], non-negative guards. */
export function planProblem(plan: unknown): string | undefined {
  const p = plan as Partial<RolloutPlan> | null;
  if (!p || typeof p !== 'object' || !Array.isArray(p.stages) || p.stages.length === 0) return 'the plan has no stages';
  if (p.stages.length > MAX_STAGES) return `the plan has more than ${MAX_STAGES} stages`;
  let previous = 0;
  for (const [i, s] of p.stages.entries()) {
    if (!s || typeof s.percent !== 'number' || !(s.percent > previous && s.percent <= 100)) return `stage ${i + 1}: percent must rise, above 0 and at most 100`;
    for (const k of ['minRequests', 'minMinutes'] as const) if (s[k] !== undefined && !(typeof s[k] === 'number' && s[k] >= 0)) return `stage ${i + 1}: ${k} must be a number >= 0`;
    previous = s.percent;
  }
  const guards = p.guards ?? {};
  for (const k of ['errorRate', 'p95LatencyMs', 'costPerRequest'] as const) {
    if (guards[k] !== undefined && !(typeof guards[k] === 'number' && guards[k] >= 0)) return `guards.${k} must be a number >= 0`;
  }
  return undefined;
}

/**
 * The rollout's decision at one check of a running stage (README "Guarded rollouts"):
 * 1. roll back when any guard is crossed with significance: the lower bound of the 95% interval of
 *    treatment minus control (Newcombe for the error rate, Maritz–Jarrett for p95 latency, Welch for
 *    cost per request) lies above the guard, each arm having at least MIN_ARM_REQUESTS requests;
 * 2. otherwise hold until the stage has lasted `minMinutes` and the treatment served `minRequests`
 *    in it, and while any guarded difference's point estimate is above its guard (or cannot be
 *    computed yet); the last stage is the end (at 100% no control remains to compare with);
 * 3. otherwise advance to the next stage, or complete after the last.
 */
export function decide(plan: RolloutPlan, stage: number, stageStartedAt: Date, now: Date, control: ArmFigures, treatment: ArmFigures): Decision {
  const figures = figuresOf(control, treatment);
  const guards = plan.guards ?? {};
  const d = figures.differences;
  const enough = control.requests >= MIN_ARM_REQUESTS && treatment.requests >= MIN_ARM_REQUESTS;
  const checks: Array<{ name: string; guard: number | undefined; diff: Bounds | undefined; unit: (x: number) => string }> = [
    { name: 'error rate', guard: guards.errorRate, diff: d.errorRate, unit: (x) => `${(x * 100).toFixed(2)} points` },
    { name: 'p95 latency', guard: guards.p95LatencyMs, diff: d.p95LatencyMs, unit: (x) => `${Math.round(x)} ms` },
    { name: 'cost per request', guard: guards.costPerRequest, diff: d.costPerRequest, unit: (x) => `${Math.round(x)} micro-credits` },
  ];
  if (enough) {
    for (const c of checks) {
      if (c.guard !== undefined && c.diff && c.diff.lower > c.guard) {
        return { kind: 'rollback', reason: `${c.name} over the control by ${c.unit(c.diff.estimate)} (95% interval ${c.unit(c.diff.lower)} to ${c.unit(c.diff.upper)}), above the guard of ${c.unit(c.guard)}`, figures };
      }
    }
  }
  const current = plan.stages[stage];
  const minutes = (now.getTime() - stageStartedAt.getTime()) / 60_000;
  if (current.minMinutes !== undefined && minutes < current.minMinutes) {
    return { kind: 'hold', reason: `stage ${stage + 1} (${current.percent}%) held ${Math.floor(minutes)} of ${current.minMinutes} minutes`, figures };
  }
  if (current.minRequests !== undefined && treatment.requests < current.minRequests) {
    return { kind: 'hold', reason: `stage ${stage + 1} (${current.percent}%) has ${treatment.requests} of ${current.minRequests} treatment requests`, figures };
  }
  if (current.percent < 100) {
    for (const c of checks) {
      if (c.guard === undefined) continue;
      if (!c.diff) return { kind: 'hold', reason: `${c.name} cannot be compared with the control yet`, figures };
      if (c.diff.estimate > c.guard) return { kind: 'hold', reason: `${c.name} over the control by ${c.unit(c.diff.estimate)}, above the guard of ${c.unit(c.guard)} but not significantly`, figures };
    }
  }
  if (stage + 1 >= plan.stages.length) return { kind: 'complete', reason: `the last stage (${current.percent}%) held within the guards`, figures };
  const next = plan.stages[stage + 1];
  return { kind: 'advance', stage: stage + 1, percent: next.percent, reason: `stage ${stage + 1} (${current.percent}%) held within the guards; on to ${next.percent}%`, figures };
}

function figuresOf(c: ArmFigures, t: ArmFigures): DecisionFigures {
  const summary = (a: ArmFigures): ArmSummary => ({
    requests: a.requests,
    errorRate: a.requests > 0 ? a.errors / a.requests : null,
    p95LatencyMs: quantile(a.latencies, 0.95) ?? null,
    costPerRequest: a.requests > 0 ? a.debit / a.requests : null,
  });
  const differences: DecisionFigures['differences'] = {};
  if (c.requests > 0 && t.requests > 0) {
    const { estimate, lower, upper } = newcombeDifference(t.errors, t.requests, c.errors, c.requests);
    differences.errorRate = { estimate, lower, upper };
  }
  const latency = quantileDifference(t.latencies, c.latencies, 0.95);
  if (latency) differences.p95LatencyMs = latency;
  const cost = welchDifference(momentsOf(t.requests, t.debit, t.debitSquares), momentsOf(c.requests, c.debit, c.debitSquares));
  if (cost) differences.costPerRequest = { estimate: cost.estimate, lower: cost.lower, upper: cost.upper };
  return { control: summary(c), treatment: summary(t), differences };
}

/** The variations' weights serving `percent` of the fallthrough to the treatment and the rest to the control (others none), on LaunchDarkly's 100000 scale. */
export function weightsFor<V extends { id: string; weight: number }>(variations: readonly V[], controlId: string, treatmentId: string, percent: number): V[] {
  const treatmentWeight = Math.round(percent * 1000);
  return variations.map((v) => ({ ...v, weight: v.id === treatmentId ? treatmentWeight : v.id === controlId ? 100_000 - treatmentWeight : 0 }));
}
