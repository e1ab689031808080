import type { Tx } from '@flagship/persistence';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { type BindingFields, type GatewayBindingsRepository, SqlGatewayBindingsRepository } from '../gateway-bindings/gateway-bindings.repository';
import { FakeGatewayBindingsRepository } from '../gateway-bindings/gateway-bindings.repository.fake';
import { seedTwoTenants } from '../testing/two-tenants';
import { MAX_DECISIONS_LISTED, type RolloutsRepository, type RolloutState, SqlRolloutsRepository } from './rollouts.repository';
import { FakeRolloutsRepository } from './rollouts.repository.fake';

const PLAN = { stages: [{ percent: 10, minRequests: 50 }, { percent: 100 }], guards: { errorRate: 0.02 } };
const fields = (rolloutPlan: BindingFields['rolloutPlan'] = PLAN): BindingFields => ({ flagKey: 'chat-model', modelAlias: null, environment: 'production', rolloutPlan, spendCaps: null });
const at = (iso: string) => new Date(iso);

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the rollout
 * service's unit spec, which runs on the fake, proves what the real one does. Bindings are written
 * through the gateway bindings' repository of the same kind, as the rollout reads that table.
 */
describe('RolloutsRepository: the fake agrees with Postgres', () => {
  const db = testDataSource();
  let tenantId: string;
  let otherTenantId: string;

  beforeAll(async () => {
    [tenantId, otherTenantId] = await seedTwoTenants(db.ds, ['production']);
  });

  type Subject = {
    repo: RolloutsRepository;
    bindings: GatewayBindingsRepository;
    tx: <T>(work: (m: Tx) => Promise<T>) => Promise<T>;
    /** Another replica holds the binding locked until `release`. */
    hold: (tenantId: string, productKey: string) => Promise<() => Promise<void>>;
    reset: () => Promise<void>;
  };
  const real = (): Subject => ({
    repo: new SqlRolloutsRepository(db.ds),
    bindings: new SqlGatewayBindingsRepository(db.ds),
    tx: db.inTransaction,
    hold: async (t, productKey) => {
      const qr = db.ds.createQueryRunner();
      await qr.connect();
      await qr.startTransaction();
      await qr.query('SELECT 1 FROM gateway_bindings WHERE tenant_id = $1 AND product_key = $2 FOR UPDATE', [t, productKey]);
      return async () => {
        await qr.rollbackTransaction();
        await qr.release();
      };
    },
    reset: async () => {
      await db.ds.query('DELETE FROM gateway_bindings');
      await db.ds.query('DELETE FROM rollout_decisions');
    },
  });
  const fake = (): Subject => {
    const bindings = new FakeGatewayBindingsRepository();
    const repo = new FakeRolloutsRepository(bindings);
    return {
      repo,
      bindings,
      tx: (work) => repo.transactions.run(work),
      hold: async (t, productKey) => {
        repo.locked.add(`${t}/${productKey}`);
        return async () => void repo.locked.delete(`${t}/${productKey}`);
      },
      reset: async () => undefined,
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });
    const bind = (t: string, productKey: string, plan: BindingFields['rolloutPlan'] = PLAN) => s.tx((m) => s.bindings.insert(m, t, productKey, fields(plan)));
    const state = (t: string, productKey: string, version: number, more: Partial<RolloutState> = {}): Omit<RolloutState, 'updatedAt'> => ({
      tenantId: t,
      productKey,
      bindingVersion: version,
      flagKey: 'chat-model',
      status: 'running',
      stage: 0,
      stageStartedAt: at('2020-01-01T00:00:00Z'),
      controlId: 'c',
      treatmentId: 't',
      flagVersion: 2,
      envVersion: 1,
      lastReason: 'plan started',
      nextCheckAt: at('2020-01-01T00:10:00Z'),
      ...more,
    });
    const claim = (now: string) => s.tx((m) => s.repo.claimDue(m, at(now)));
    const withoutUpdatedAt = (r: RolloutState | null) => {
      if (!r) return r;
      const { updatedAt: _u, ...rest } = r;
      return rest;
    };

    it('claims a new plan of any tenant, with no state yet; a binding without a plan is never due; binding() reads the plan per tenant', async () => {
      await bind(tenantId, 'plain', null);
      expect(await claim('2020-01-01T00:00:00Z')).toBeNull();
      await bind(otherTenantId, 'core');
      expect(await claim('2020-01-01T00:00:00Z')).toEqual({
        binding: { tenantId: otherTenantId, productKey: 'core', flagKey: 'chat-model', environment: 'production', version: 1, rolloutPlan: PLAN },
        state: null,
      });
      expect(await s.repo.binding(otherTenantId, 'core')).toEqual({ tenantId: otherTenantId, productKey: 'core', flagKey: 'chat-model', environment: 'production', version: 1, rolloutPlan: PLAN });
      expect(await s.repo.binding(tenantId, 'plain')).toMatchObject({ rolloutPlan: null });
      expect(await s.repo.binding(tenantId, 'core')).toBeNull();
      expect(await s.repo.state(otherTenantId, 'core')).toBeNull();
    });

    it('stores a state as given and replaces it; a running state is due from its next check on, a finished one never, one of an older binding version at once', async () => {
      await bind(tenantId, 'core');
      await s.tx((m) => s.repo.saveState(m, state(tenantId, 'core', 1, { controlId: null, flagVersion: null, envVersion: null, lastReason: null })));
      expect(withoutUpdatedAt(await s.repo.state(tenantId, 'core'))).toEqual(state(tenantId, 'core', 1, { controlId: null, flagVersion: null, envVersion: null, lastReason: null }));
      expect(await s.repo.state(otherTenantId, 'core')).toBeNull();
      expect(await claim('2020-01-01T00:09:59.999Z')).toBeNull();
      const due = await claim('2020-01-01T00:10:00Z');
      expect([due?.binding.productKey, withoutUpdatedAt(due?.state ?? null)]).toEqual(['core', withoutUpdatedAt(await s.repo.state(tenantId, 'core'))]);

      for (const status of ['paused', 'completed', 'rolled_back', 'stopped'] as const) {
        await s.tx((m) => s.repo.saveState(m, state(tenantId, 'core', 1, { status, stage: 1 })));
        expect(await claim('2030-01-01T00:00:00Z')).toBeNull();
      }
      expect(withoutUpdatedAt(await s.repo.state(tenantId, 'core'))).toMatchObject({ status: 'stopped', stage: 1 });
      // The plan was edited: the binding's version moved past the state's, so it is judged afresh.
      await s.tx((m) => s.bindings.update(m, tenantId, 'core', 1, fields({ ...PLAN, paused: true } as BindingFields['rolloutPlan'])));
      expect(await claim('2020-01-01T00:00:00Z')).toMatchObject({ binding: { version: 2, rolloutPlan: { paused: true } }, state: { bindingVersion: 1, status: 'stopped' } });
    });

    it('claims the earliest next check first, skips a binding another replica holds, and takes it once released', async () => {
      await bind(tenantId, 'late');
      await bind(tenantId, 'early');
      await s.tx(async (m) => {
        await s.repo.saveState(m, state(tenantId, 'late', 1, { nextCheckAt: at('2020-01-01T00:20:00Z') }));
        await s.repo.saveState(m, state(tenantId, 'early', 1, { nextCheckAt: at('2020-01-01T00:10:00Z') }));
      });
      expect((await claim('2020-01-01T01:00:00Z'))?.binding.productKey).toBe('early');
      const release = await s.hold(tenantId, 'early');
      try {
        expect((await claim('2020-01-01T01:00:00Z'))?.binding.productKey).toBe('late');
      } finally {
        await release();
      }
      expect((await claim('2020-01-01T01:00:00Z'))?.binding.productKey).toBe('early');
    });

    it('logs decisions per binding, newest first, figures as written, at most MAX_DECISIONS_LISTED; another tenant’s are not listed', async () => {
      await bind(tenantId, 'core');
      const decision = (n: number) => ({ bindingVersion: 1, flagKey: 'chat-model', decision: 'held' as const, stage: 0, percent: 10, reason: `held ${n}`, figures: null, flagVersion: 2 });
      await s.tx(async (m) => {
        await s.repo.logDecision(m, tenantId, 'core', { ...decision(0), decision: 'started', figures: undefined }, at('2020-01-01T00:00:00Z'));
        for (let i = 1; i <= MAX_DECISIONS_LISTED; i++) await s.repo.logDecision(m, tenantId, 'core', decision(i), at('2020-01-01T00:01:00Z'));
        await s.repo.logDecision(m, tenantId, 'core', { ...decision(0), decision: 'rolled_back', percent: 0, figures: { control: { requests: 400, errorRate: 0.005 }, differences: {} } }, at('2020-01-01T00:02:00Z'));
        await s.repo.logDecision(m, otherTenantId, 'core', decision(-1), at('2020-01-01T00:03:00Z'));
      });
      const listed = await s.repo.decisions(tenantId, 'core');
      expect(listed).toHaveLength(MAX_DECISIONS_LISTED);
      expect(listed[0]).toEqual({ id: expect.any(String), bindingVersion: 1, flagKey: 'chat-model', decision: 'rolled_back', stage: 0, percent: 0, reason: 'held 0', figures: { control: { requests: 400, errorRate: 0.005 }, differences: {} }, flagVersion: 2, createdAt: at('2020-01-01T00:02:00Z') });
      expect(listed.slice(1, 3).map((d) => [d.reason, d.figures])).toEqual([
        [`held ${MAX_DECISIONS_LISTED}`, null],
        [`held ${MAX_DECISIONS_LISTED - 1}`, null],
      ]);
      expect(listed.at(-1)?.reason).toBe('held 2'); // the oldest two (started, held 1) are past the limit
      expect((await s.repo.decisions(otherTenantId, 'core')).map((d) => d.reason)).toEqual(['held -1']);
      expect(await s.repo.decisions(tenantId, 'other')).toEqual([]);
    });

    it('holds no state without its binding: refused for a binding that does not exist, gone with a binding deleted and bound again', async () => {
      const refused = await s.tx((m) => s.repo.saveState(m, state(tenantId, 'ghost', 1))).catch((e: unknown) => e);
      expect((refused as { code?: string }).code).toBe('23503');
      await bind(tenantId, 'core');
      await s.tx((m) => s.repo.saveState(m, state(tenantId, 'core', 1, { status: 'completed' })));
      await s.tx((m) => s.bindings.delete(m, tenantId, 'core'));
      expect(await s.repo.state(tenantId, 'core')).toBeNull();
      await bind(tenantId, 'core');
      expect(await s.repo.state(tenantId, 'core')).toBeNull();
      expect(await claim('2020-01-01T00:00:00Z')).toMatchObject({ binding: { productKey: 'core', version: 1 }, state: null });
    });
  });
});
