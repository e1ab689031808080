import type { TransactionRunner } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { ExperimentScope, VariationFigures } from '../experiments/experiments.repository';
import { ALICE, flagServices, OTHER_TENANT, TENANT } from '../flags/flag-services.fixture';
import { FlagProblems } from '../flags/flags.errors';
import type { BindingFields } from '../gateway-bindings/gateway-bindings.repository';
import { FakeGatewayBindingsRepository } from '../gateway-bindings/gateway-bindings.repository.fake';
import { FakeRolloutsRepository } from './rollouts.repository.fake';
import { RolloutsService } from './rollouts.service';

const CHECK_MS = 60_000;
const T0 = new Date('2026-03-01T08:00:00Z');
const PLAN = { stages: [{ percent: 10, minRequests: 50 }, { percent: 50, minRequests: 50 }, { percent: 100 }], guards: { errorRate: 0.02, p95LatencyMs: 400 } };

/** One ledger row of a completed gateway request. */
interface LedgerRow {
  tenantId: string;
  productKey: string;
  flagKey: string;
  variation: string;
  at: Date;
  failed: boolean;
  latency: number;
  debit: number;
}

/** The two reads the rollout makes of the usage ledger, over rows the spec adds (ExperimentsRepository's SQL is proven in the experiments' int spec). */
function ledgerOf(rows: LedgerRow[]) {
  const scoped = (s: ExperimentScope) => rows.filter((r) => r.tenantId === s.tenantId && r.flagKey === s.flagKey && (s.productKey === undefined || r.productKey === s.productKey) && r.at >= s.from && r.at < s.to);
  return {
    figures: async (s: ExperimentScope): Promise<VariationFigures[]> => {
      const by = new Map<string, VariationFigures>();
      for (const r of scoped(s)) {
        const f = by.get(r.variation) ?? { variation: r.variation, requests: 0, errors: 0, inputTokens: 0, outputTokens: 0, debit: 0, debitSquares: 0, latency: { n: 0, p50: null, p95: null }, firstToken: { n: 0, p50: null, p95: null }, feedback: { n: 0, sum: 0, squares: 0 }, errorsByCode: {} };
        f.requests += 1;
        f.errors += r.failed ? 1 : 0;
        f.debit += r.debit;
        f.debitSquares += r.debit * r.debit;
        by.set(r.variation, f);
      }
      return [...by.values()];
    },
    latencies: async (s: ExperimentScope): Promise<Map<string | null, number[]>> => {
      const out = new Map<string | null, number[]>();
      for (const r of scoped(s)) if (!r.failed) out.set(r.variation, [...(out.get(r.variation) ?? []), r.latency].sort((x, y) => x - y));
      return out;
    },
  };
}

/**
 * RolloutsService over the flags' fixture (FlagsService on its fakes), the gateway bindings' and the
 * rollouts' fakes, in one transaction runner that undoes every fake's writes on a throw, as Postgres
 * undoes the claiming transaction; the ledger is rows the spec adds; `clock.now` is the service's time.
 */
function rolloutServices() {
  const flags = flagServices();
  const bindings = new FakeGatewayBindingsRepository();
  const repo = new FakeRolloutsRepository(bindings);
  const transactions: Pick<TransactionRunner, 'run'> = { run: (work) => flags.repo.transactions.run((m) => repo.transactions.run(() => work(m))) };
  const clock = { now: T0 };
  const ledger: LedgerRow[] = [];
  /** What the next flag write throws after writing (a refusal of the flag's rules, or an outage), once. */
  const failNextWrite: { with?: Error } = {};
  const flagPort = {
    lockWithin: flags.service.lockWithin.bind(flags.service),
    auditWithin: flags.service.auditWithin.bind(flags.service),
    applyWithin: async (...args: Parameters<typeof flags.service.applyWithin>) => {
      const refusal = await flags.service.applyWithin(...args);
      const failure = failNextWrite.with;
      failNextWrite.with = undefined;
      if (failure) throw failure;
      return refusal;
    },
  };
  const rollout = new RolloutsService(transactions, repo, ledgerOf(ledger), flagPort, { ROLLOUT_CHECK_MS: CHECK_MS }, () => new Date(clock.now));
  return { ...flags, bindings, rollouts: repo, rollout, clock, ledger, failNextWrite };
}

describe('RolloutsService (the runner’s pass, over the fakes)', () => {
  let s: ReturnType<typeof rolloutServices>;
  /** Variation ids of the flag `chat-model`: small (the control: the default, so the off value) and large. */
  let small: string;
  let large: string;

  const jsonFlag = async (key: string, tenantId = TENANT) => {
    const row = await s.service.create(tenantId, undefined, ALICE, {
      key,
      name: key,
      type: 'json',
      defaultValue: { model: 'small' },
      flag_variations: [
        { name: 'small', value: { model: 'small' } },
        { name: 'large', value: { model: 'large' } },
      ],
    } as never);
    return Object.fromEntries(row.flag.variations.map((v) => [v.name, v.id])) as { small: string; large: string };
  };
  const bind = (productKey: string, plan: unknown, opts: { flagKey?: string; tenantId?: string } = {}) =>
    s.bindings.transactions.run((m) => s.bindings.insert(m, opts.tenantId ?? TENANT, productKey, { flagKey: opts.flagKey ?? 'chat-model', modelAlias: null, environment: 'production', rolloutPlan: plan as BindingFields['rolloutPlan'], spendCaps: null }));
  const rebind = async (productKey: string, plan: unknown) => {
    const row = (await s.bindings.find(TENANT, productKey))!;
    await s.bindings.transactions.run((m) => s.bindings.update(m, TENANT, productKey, row.version, { ...row, rolloutPlan: plan as BindingFields['rolloutPlan'] }));
  };
  const weights = async (flagKey = 'chat-model') => (await s.service.get(TENANT, 'production', flagKey)).flag.variations.map((v) => [v.name, v.weight]);
  const step = () => s.rollout.runNext();
  const decide = async () => (await s.rollout.runNext())?.decision;
  const later = (ms = CHECK_MS) => void (s.clock.now = new Date(s.clock.now.getTime() + ms));
  const logged = async (productKey = 'core') => (await s.rollouts.decisions(TENANT, productKey)).map((d) => [d.decision, d.stage, d.percent]).reverse();
  /** Rollout writes of the flag (its `update` audit records by the rollout). */
  const flagWrites = (productKey = 'core') => s.repo.auditRows.filter((a) => a.action === 'update' && a.actor === `rollout:${productKey}`).length;
  /** `n` requests of `variation` now, `failing` of them failed, latencies spread over [lo, hi). */
  const traffic = (variation: string, n: number, failing: number, lo = 200, hi = 600, productKey = 'core', tenantId = TENANT) => {
    for (let i = 1; i <= n; i++) s.ledger.push({ tenantId, productKey, flagKey: 'chat-model', variation, at: new Date(s.clock.now), failed: i <= failing, latency: lo + ((hi - lo) * i) / n, debit: i <= failing ? 0 : 1000 });
  };

  /** A plan bound to `core` and started (10% to large). */
  const started = async () => {
    await bind('core', PLAN);
    await step();
  };
  /** The treatment fails a third of its requests, the control hardly ever; then the next check is due. */
  const regressing = () => {
    traffic(small, 400, 2);
    traffic(large, 45, 15);
    later();
  };

  beforeEach(async () => {
    s = rolloutServices();
    ({ small, large } = await jsonFlag('chat-model'));
  });

  it('has nothing to do without a binding holding a plan', async () => {
    await bind('core', null);
    expect(await step()).toBeNull();
    expect(await s.rollouts.state(TENANT, 'core')).toBeNull();
  });

  it('starts a new plan once: the first stage’s weights written through the flag’s write path as the rollout, the state and the decision recorded and audited', async () => {
    await bind('core', PLAN);
    expect(await step()).toEqual({ tenantId: TENANT, productKey: 'core', decision: 'started', reason: 'plan started: 10% to large, the rest to small' });
    expect(await weights()).toEqual([
      ['small', 90_000],
      ['large', 10_000],
    ]);
    const flag = await s.service.get(TENANT, 'production', 'chat-model');
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({
      bindingVersion: 1,
      status: 'running',
      stage: 0,
      stageStartedAt: T0,
      controlId: small,
      treatmentId: large,
      flagVersion: flag.flag.version,
      envVersion: flag.env.version,
      nextCheckAt: new Date(T0.getTime() + CHECK_MS),
    });
    expect(await logged()).toEqual([['started', 0, 10]]);
    expect(s.repo.auditRows.filter((a) => a.action !== 'create').map((a) => [a.action, a.actor])).toEqual([
      ['update', 'rollout:core'],
      ['rollout', 'rollout:core'],
    ]);
    expect(s.recorded.filter((e) => e.type === 'flag.updated').map((e) => (e.data as { actor: string }).actor)).toEqual(['rollout:core']);
    // The same pass again, and again just before the next check: nothing is due, nothing is written twice.
    expect(await step()).toBeNull();
    later(CHECK_MS - 1);
    expect(await step()).toBeNull();
    expect([flagWrites(), (await logged()).length]).toEqual([1, 1]);
  });

  it('rolls the treatment back when a guard is crossed with significance, once; a rolled-back plan is never judged again', async () => {
    await started();
    regressing();
    const judged = await step();
    expect(judged?.decision).toBe('rolled_back');
    expect(judged?.reason).toMatch(/^error rate over the control by 32\.83 points \(95% interval .* above the guard of 2\.00 points$/);
    expect(await weights()).toEqual([
      ['small', 100_000],
      ['large', 0],
    ]);
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'rolled_back', stage: 0 });
    const [last] = await s.rollouts.decisions(TENANT, 'core');
    expect(last).toMatchObject({ decision: 'rolled_back', percent: 0, figures: { treatment: { requests: 45, errorRate: 15 / 45 }, control: { requests: 400 } } });
    later(10 * CHECK_MS);
    expect(await step()).toBeNull();
    expect(flagWrites()).toBe(2);
  });

  it('holds while the stage lacks treatment requests, logging a hold once per kind of reason; then advances, and judges the next stage only on its own traffic', async () => {
    await started();
    traffic(small, 400, 2);
    traffic(large, 30, 0);
    later();
    expect(await step()).toMatchObject({ decision: 'held', reason: 'stage 1 (10%) has 30 of 50 treatment requests' });
    traffic(large, 10, 0);
    later();
    expect(await step()).toMatchObject({ decision: 'held', reason: 'stage 1 (10%) has 40 of 50 treatment requests' });
    expect(await logged()).toEqual([
      ['started', 0, 10],
      ['held', 0, 10],
    ]);
    expect((await s.rollouts.state(TENANT, 'core'))?.lastReason).toBe('stage 1 (10%) has 40 of 50 treatment requests');
    expect(flagWrites()).toBe(1);

    traffic(large, 20, 0, 210, 610);
    later();
    const advancedAt = s.clock.now;
    expect(await step()).toMatchObject({ decision: 'advanced', reason: 'stage 1 (10%) held within the guards; on to 50%' });
    expect(await weights()).toEqual([
      ['small', 50_000],
      ['large', 50_000],
    ]);
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'running', stage: 1, stageStartedAt: advancedAt });
    // The 60 treatment requests were the first stage's: the second starts from none.
    later();
    expect(await step()).toMatchObject({ decision: 'held', reason: 'stage 2 (50%) has 0 of 50 treatment requests' });
    expect(await logged()).toEqual([
      ['started', 0, 10],
      ['held', 0, 10],
      ['advanced', 1, 50],
      ['held', 1, 50],
    ]);
  });

  it('completes after the last stage held, writing nothing more; a completed plan is never judged again', async () => {
    await bind('core', { stages: [{ percent: 10 }, { percent: 100 }], guards: {} });
    await step();
    later();
    expect(await decide()).toBe('advanced');
    later();
    expect(await step()).toMatchObject({ decision: 'completed', reason: 'the last stage (100%) held within the guards' });
    expect(await weights()).toEqual([
      ['small', 0],
      ['large', 100_000],
    ]);
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'completed', stage: 1 });
    expect(await logged()).toEqual([
      ['started', 0, 10],
      ['advanced', 1, 100],
      ['completed', 1, 100],
    ]);
    expect(flagWrites()).toBe(2);
    later(10 * CHECK_MS);
    expect(await step()).toBeNull();
  });

  it('stops a plan whose flag was changed since its last write, leaving the flag as it was edited', async () => {
    await started();
    await s.service.update(TENANT, 'production', ALICE, 'chat-model', { description: 'by hand' } as never);
    later();
    const stopped = await step();
    expect(stopped?.decision).toBe('stopped');
    expect(stopped?.reason).toMatch(/^flag chat-model was changed since the plan's last write \(version 2\.1, now 3\.1\): the plan stops/);
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'stopped', lastReason: stopped?.reason });
    expect((await s.service.get(TENANT, 'production', 'chat-model')).flag).toMatchObject({ version: 3, description: 'by hand' });
    expect(flagWrites()).toBe(1);
    expect(s.repo.auditRows.at(-1)).toMatchObject({ action: 'rollout', actor: 'rollout:core', changes: { decision: 'stopped' } });
    later();
    expect(await step()).toBeNull();
  });

  it('stops a plan whose flag’s targeting in the bound environment was changed; a change in another environment is not in its way', async () => {
    await started();
    await s.service.update(TENANT, 'staging', ALICE, 'chat-model', { enabled: true } as never);
    later();
    expect(await decide()).toBe('held');
    await s.service.update(TENANT, 'production', ALICE, 'chat-model', { enabled: true } as never);
    later();
    expect((await step())?.reason).toMatch(/^flag chat-model was changed since the plan's last write \(version 2\.1, now 2\.2\)/);
  });

  it.each([
    ['a plan without stages', { stages: [], guards: {} }, 'chat-model', 'the plan cannot run: the plan has no stages'],
    ['falling percents', { stages: [{ percent: 50 }, { percent: 10 }], guards: {} }, 'chat-model', 'the plan cannot run: stage 2: percent must rise, above 0 and at most 100'],
    ['a treatment that is the control', { ...PLAN, treatment: 'small' }, 'chat-model', 'flag chat-model has no treatment variation named small'],
    ['a treatment the flag lacks', { ...PLAN, treatment: 'huge' }, 'chat-model', 'flag chat-model has no treatment variation named huge'],
    ['a flag that does not exist', PLAN, 'ghost', 'flag ghost does not exist'],
  ])('stops, writing no flag, %s', async (_case, plan, flagKey, reason) => {
    await bind('core', plan, { flagKey });
    expect(await step()).toEqual({ tenantId: TENANT, productKey: 'core', decision: 'stopped', reason });
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'stopped', stage: 0, lastReason: reason });
    expect(await logged()).toEqual([['stopped', 0, (plan as { stages: Array<{ percent: number }> }).stages[0]?.percent ?? 0]]);
    expect(flagWrites()).toBe(0);
    expect(await weights()).toEqual([
      ['small', 0],
      ['large', 0],
    ]);
    later();
    expect(await step()).toBeNull();
  });

  it('rolls out the treatment the plan names, by name or by id', async () => {
    await bind('core', { ...PLAN, treatment: 'large' });
    expect((await step())?.reason).toBe('plan started: 10% to large, the rest to small');
    const byId = await jsonFlag('by-id');
    await bind('other', { ...PLAN, treatment: byId.large }, { flagKey: 'by-id' });
    expect((await step())?.reason).toBe('plan started: 10% to large, the rest to small');
    expect(await weights('by-id')).toEqual([
      ['small', 90_000],
      ['large', 10_000],
    ]);
  });

  it('writes nothing for a paused plan, and never judges it again until the plan is edited: an edited plan starts afresh', async () => {
    await bind('core', { ...PLAN, paused: true });
    expect(await step()).toEqual({ tenantId: TENANT, productKey: 'core', decision: 'paused', reason: 'the plan is paused' });
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'paused', stage: 0 });
    expect(flagWrites()).toBe(0);
    later(10 * CHECK_MS);
    expect(await step()).toBeNull();
    await rebind('core', PLAN);
    expect(await decide()).toBe('started');
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'running', bindingVersion: 2, stage: 0 });
    expect(await logged()).toEqual([
      ['paused', 0, 10],
      ['started', 0, 10],
    ]);
  });

  it('starts afresh when the plan of a finished rollout is edited (a new binding version)', async () => {
    await started();
    regressing();
    expect(await decide()).toBe('rolled_back');
    await rebind('core', { ...PLAN, stages: [{ percent: 5 }, { percent: 100 }] });
    expect(await step()).toMatchObject({ decision: 'started', reason: 'plan started: 5% to large, the rest to small' });
    expect(await weights()).toEqual([
      ['small', 95_000],
      ['large', 5_000],
    ]);
  });

  it('stops the plan when the flag’s rules refuse the write (4xx), undoing the write; an outage (5xx or an error) is thrown and changes nothing', async () => {
    await bind('core', PLAN);
    s.failNextWrite.with = new ProblemException(FlagProblems['flag-too-large'], 'The flag would exceed 32768 bytes.');
    expect(await step()).toEqual({ tenantId: TENANT, productKey: 'core', decision: 'stopped', reason: 'the flag write was refused: The flag would exceed 32768 bytes.' });
    expect(await weights()).toEqual([
      ['small', 0],
      ['large', 0],
    ]);
    expect(flagWrites()).toBe(0);
    expect(await s.rollouts.state(TENANT, 'core')).toMatchObject({ status: 'stopped' });

    await bind('other', PLAN);
    s.failNextWrite.with = new Error('connection terminated');
    await expect(step()).rejects.toThrow('connection terminated');
    expect([await s.rollouts.state(TENANT, 'other'), await s.rollouts.decisions(TENANT, 'other'), flagWrites('other')]).toEqual([null, [], 0]);
    expect(await step()).toMatchObject({ productKey: 'other', decision: 'started' });
  });

  it('skips a binding another replica holds, and takes it once released', async () => {
    await bind('core', PLAN);
    s.rollouts.locked.add(`${TENANT}/core`);
    expect(await step()).toBeNull();
    s.rollouts.locked.delete(`${TENANT}/core`);
    expect(await decide()).toBe('started');
  });

  it('judges a binding on its own product key’s and tenant’s traffic only, of its control and treatment however the ledger names them', async () => {
    const other = await jsonFlag('chat-model', OTHER_TENANT);
    await started();
    // Failing treatment traffic of another product key on the same flag, and of another tenant: not this rollout's.
    traffic(small, 400, 2, 200, 600, 'insights');
    traffic(large, 45, 15, 200, 600, 'insights');
    traffic(other.small, 400, 2, 200, 600, 'core', OTHER_TENANT);
    traffic(other.large, 45, 15, 200, 600, 'core', OTHER_TENANT);
    later();
    expect(await step()).toMatchObject({ decision: 'held', reason: 'stage 1 (10%) has 0 of 50 treatment requests' });
    // Recorded by variation name: still the treatment's.
    traffic('small', 400, 2);
    traffic('large', 45, 15);
    later();
    expect(await decide()).toBe('rolled_back');
  });
});
