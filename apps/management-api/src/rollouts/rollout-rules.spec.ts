import { type ArmFigures, decide, planProblem, type RolloutPlan, weightsFor } from './rollout-rules';

/** An arm of `requests` with `errors`, succeeded latencies spread evenly over [lo, hi], and `cost` micro-credits each (±10%). */
function arm(requests: number, errors: number, lo: number, hi: number, cost: number): ArmFigures {
  const ok = requests - errors;
  const latencies = Array.from({ length: ok }, (_, i) => Math.round(lo + ((hi - lo) * i) / Math.max(1, ok - 1)));
  const debits = Array.from({ length: requests }, (_, i) => cost * (0.9 + (0.2 * i) / Math.max(1, requests - 1)));
  return { requests, errors, latencies, debit: debits.reduce((s, x) => s + x, 0), debitSquares: debits.reduce((s, x) => s + x * x, 0) };
}

const plan: RolloutPlan = {
  stages: [{ percent: 5, minRequests: 100, minMinutes: 10 }, { percent: 25, minMinutes: 10 }, { percent: 100, minMinutes: 30 }],
  guards: { errorRate: 0.02, p95LatencyMs: 300, costPerRequest: 500 },
};
const start = new Date('2026-11-29T10:00:00Z');
const after = (minutes: number) => new Date(start.getTime() + minutes * 60_000);
const control = arm(2000, 20, 200, 600, 1000);

describe('guarded rollout decision rules', () => {
  it('advances a stage held long enough, with enough treatment requests, within every guard', () => {
    const d = decide(plan, 0, start, after(11), control, arm(120, 1, 200, 620, 1100));
    expect(d).toMatchObject({ kind: 'advance', stage: 1, percent: 25, reason: 'stage 1 (5%) held within the guards; on to 25%' });
    expect(d.figures.treatment.requests).toBe(120);
  });

  it('holds before minMinutes and before minRequests, saying which', () => {
    expect(decide(plan, 0, start, after(4), control, arm(120, 1, 200, 620, 1100))).toMatchObject({ kind: 'hold', reason: 'stage 1 (5%) held 4 of 10 minutes' });
    expect(decide(plan, 0, start, after(11), control, arm(60, 0, 200, 620, 1100))).toMatchObject({ kind: 'hold', reason: 'stage 1 (5%) has 60 of 100 treatment requests' });
  });

  it('rolls back as soon as an error-rate increase is significant, even before the stage may end', () => {
    const d = decide(plan, 0, start, after(1), control, arm(80, 16, 200, 620, 1100));
    expect(d.kind).toBe('rollback');
    expect(d.reason).toMatch(/^error rate over the control by 19\.00 points \(95% interval \d+\.\d\d points to \d+\.\d\d points\), above the guard of 2\.00 points$/);
    expect(d.figures.differences.errorRate!.lower).toBeGreaterThan(0.02);
  });

  it('rolls back on a significantly slower p95 and on a significantly dearer request', () => {
    expect(decide(plan, 0, start, after(1), control, arm(200, 2, 900, 2500, 1000))).toMatchObject({ kind: 'rollback', reason: expect.stringMatching(/^p95 latency over the control by/) });
    expect(decide(plan, 0, start, after(1), control, arm(200, 2, 200, 600, 3000))).toMatchObject({ kind: 'rollback', reason: expect.stringMatching(/^cost per request over the control by/) });
  });

  it('does not roll back on an increase that is not significant: it holds instead of advancing', () => {
    // 2 errors in 40 against 1% of the control: +4 points, over the guard, but the interval reaches below it.
    const d = decide(plan, 0, start, after(11), control, arm(40, 2, 200, 600, 1000));
    expect(d.figures.differences.errorRate!.lower).toBeLessThan(0.02);
    expect(d).toMatchObject({ kind: 'hold', reason: 'stage 1 (5%) has 40 of 100 treatment requests' });
    const past = decide({ ...plan, stages: [{ percent: 5, minMinutes: 10 }, ...plan.stages.slice(1)] }, 0, start, after(11), control, arm(40, 2, 200, 600, 1000));
    expect(past).toMatchObject({ kind: 'hold', reason: 'error rate over the control by 4.00 points, above the guard of 2.00 points but not significantly' });
  });

  it('judges no guard crossed below the minimum requests per arm', () => {
    expect(decide(plan, 0, start, after(1), control, arm(9, 9, 200, 600, 1000))).toMatchObject({ kind: 'hold' });
    expect(decide(plan, 0, start, after(1), control, arm(10, 9, 200, 600, 1000))).toMatchObject({ kind: 'rollback' });
  });

  it('holds while a guarded figure cannot be compared (no latencies yet), and completes after the last stage', () => {
    const noLatencies = { ...arm(150, 0, 200, 600, 1000), latencies: [] };
    expect(decide(plan, 1, start, after(11), control, noLatencies)).toMatchObject({ kind: 'hold', reason: 'p95 latency cannot be compared with the control yet' });
    // At 100% no control traffic remains: the stage ends on time alone.
    const none: ArmFigures = { requests: 0, errors: 0, latencies: [], debit: 0, debitSquares: 0 };
    expect(decide(plan, 2, start, after(31), none, arm(500, 1, 200, 600, 1000))).toMatchObject({ kind: 'complete', reason: 'the last stage (100%) held within the guards' });
    expect(decide(plan, 2, start, after(20), none, arm(500, 1, 200, 600, 1000))).toMatchObject({ kind: 'hold' });
  });

  it('refuses malformed plans with a reason', () => {
    expect(planProblem(plan)).toBeUndefined();
    expect(planProblem({ stages: [] })).toBe('the plan has no stages');
    expect(planProblem({ stages: [{ percent: 25 }, { percent: 5 }] })).toBe('stage 2: percent must rise, above 0 and at most 100');
    expect(planProblem({ stages: [{ percent: 101 }] })).toBe('stage 1: percent must rise, above 0 and at most 100');
    expect(planProblem({ stages: [{ percent: 5, minMinutes: -1 }] })).toBe('stage 1: minMinutes must be a number >= 0');
    expect(planProblem({ stages: [{ percent: 5 }], guards: { errorRate: 'high' } })).toBe('guards.errorRate must be a number >= 0');
  });

  it('weights the fallthrough between control and treatment on the 100000 scale, other variations none', () => {
    const vs = [{ id: 'a', weight: 1 }, { id: 'b', weight: 1 }, { id: 'c', weight: 5 }];
    expect(weightsFor(vs, 'a', 'b', 5).map((v) => v.weight)).toEqual([95_000, 5_000, 0]);
    expect(weightsFor(vs, 'a', 'b', 0).map((v) => v.weight)).toEqual([100_000, 0, 0]);
    expect(weightsFor(vs, 'a', 'b', 0.5).map((v) => v.weight)).toEqual([99_500, 500, 0]);
  });
});
