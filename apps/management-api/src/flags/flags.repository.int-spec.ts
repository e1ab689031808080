import { flagDefinitionBytes, type Variation } from '@flagship/flag-evaluation';
import { createDataSource, type DataSource, isUniqueViolation, type Tx, withTransaction } from '@flagship/persistence';
import { EvaluationsRepository } from '@flagship/flag-store';
import { createTestDatabase, describeAgreement, type TestDatabase } from '@flagship/testing';
import { FlagAuditEntity, FlagEntity, FlagEnvironmentEntity } from './flag.entity';
import { definitionOf } from './flag.mapper';
import { type FlagRow, type FlagsRepository, type NewFlagFields, SqlFlagsRepository } from './flags.repository';
import { FakeFlagsRepository } from './flags.repository.fake';
import { seedTwoTenants } from '../testing/two-tenants';

const ENVIRONMENTS = ['development', 'production', 'staging'];
const ON = '00000000-0000-4000-8000-00000000000a';
const OFF = '00000000-0000-4000-8000-00000000000b';
const VARIATIONS: Variation[] = [
  { id: ON, name: 'on', value: true, description: '', weight: 0 },
  { id: OFF, name: 'off', value: false, description: '', weight: 0 },
];

const fields = (key: string, more: Partial<NewFlagFields> = {}): NewFlagFields => ({
  key,
  projectId: null,
  name: `Flag ${key}`,
  type: 'boolean',
  defaultValue: false,
  description: '',
  tags: ['t'],
  variations: VARIATIONS,
  ...more,
});

/** A row without its timestamps and generated ids, to compare across stores. */
const shape = (r: FlagRow | null) => {
  if (r === null) return null;
  const { id: _id, tenantId: _t, createdAt: _c, updatedAt: _u, ...flag } = r.flag;
  const { flagId: _f, tenantId: _t2, updatedAt: _u2, servingOneVariationSince: _s, ...env } = r.env;
  return { flag, env };
};

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the flag
 * services' unit specs, which run on the fake, prove what the real one does.
 */
describe('FlagsRepository: the fake agrees with Postgres', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let tenantId: string;
  let otherTenantId: string;
  let projectId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource({ url: db.url, poolSize: 2, entities: [FlagEntity, FlagEnvironmentEntity, FlagAuditEntity] });
    await ds.initialize();
    [tenantId, otherTenantId] = await seedTwoTenants(ds, ENVIRONMENTS);
    [{ id: projectId }] = await ds.query(`INSERT INTO projects (tenant_id, name) VALUES ($1, 'Shop') RETURNING id`, [tenantId]);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  type Subject = {
    repo: FlagsRepository;
    tx: <T>(work: (m: Tx) => Promise<T>) => Promise<T>;
    reset: () => Promise<void>;
    /** What an evaluator's recorder writes; the real one through EvaluationsRepository. */
    evaluated: (tenantId: string, environment: string, flagKey: string, at: Date) => Promise<void>;
    /** The subject's clock (Postgres': now). */
    now: () => Date;
  };

  const real = (): Subject => ({
    repo: new SqlFlagsRepository(ds),
    tx: (work) => withTransaction(ds, work),
    reset: async () => {
      await ds.query(`DELETE FROM flags`);
      await ds.query(`DELETE FROM flag_audit`);
      await ds.query(`DELETE FROM flag_evaluations`);
    },
    evaluated: (tenantId, environment, flagKey, at) => new EvaluationsRepository(ds).recordEvaluations([{ tenantId, environment, flagKey, at }]),
    now: () => new Date(),
  });
  const fake = (): Subject => {
    const repo = new FakeFlagsRepository();
    for (const t of [tenantId, otherTenantId]) repo.environments.set(t, [...ENVIRONMENTS]);
    return {
      repo,
      tx: (work) => repo.transactions.run(work),
      reset: async () => undefined,
      evaluated: async (tenantId, environment, flagKey, at) => repo.recordEvaluation(tenantId, environment, flagKey, at),
      now: () => repo.now(),
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('inserts a flag with a row in every environment of its tenant, switched on only where asked; another tenant sees none', async () => {
      const flag = await s.tx((m) => s.repo.insert(m, tenantId, fields('checkout', { projectId }), 'staging'));
      expect(flag).toMatchObject({ key: 'checkout', projectId, version: 1, clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false } });
      for (const environment of ENVIRONMENTS) {
        expect(shape(await s.repo.findRow(tenantId, 'checkout', environment))).toEqual({
          flag: { key: 'checkout', projectId, name: 'Flag checkout', type: 'boolean', defaultValue: false, description: '', tags: ['t'], variations: VARIATIONS, clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false }, version: 1 },
          env: { environmentKey: environment, enabled: environment === 'staging', offValue: null, targets: [], rules: [], prerequisites: [], salt: null, version: 1 },
        });
      }
      expect(await s.repo.environmentsOf(tenantId, flag.id)).toEqual(ENVIRONMENTS);
      expect(await s.repo.findByKey(otherTenantId, 'checkout')).toBeNull();
      expect(await s.repo.findRow(tenantId, 'checkout', 'nowhere')).toBeNull();
      expect(await s.repo.environmentsOf(otherTenantId, flag.id)).toEqual([]);
    });

    it('refuses a key taken in the tenant as a unique violation, writing nothing of that transaction; another tenant may take it', async () => {
      await s.tx((m) => s.repo.insert(m, tenantId, fields('taken')));
      const err = await s
        .tx(async (m) => {
          await s.repo.insert(m, tenantId, fields('first-of-two'));
          return s.repo.insert(m, tenantId, fields('taken'));
        })
        .catch((e: unknown) => e);
      expect(isUniqueViolation(err)).toBe(true);
      expect(await s.repo.findByKey(tenantId, 'first-of-two')).toBeNull();
      await s.tx((m) => s.repo.insert(m, otherTenantId, fields('taken')));
      expect((await s.repo.definitions(otherTenantId, 'production')).map((d) => d.key)).toEqual(['taken']);
    });

    it('updates each row only at its expected version, bumping it; a null off value is stored as null', async () => {
      const flag = await s.tx((m) => s.repo.insert(m, tenantId, fields('edited')));
      await s.tx(async (m) => {
        expect(await s.repo.updateFlag(m, tenantId, flag.id, 1, { name: 'Edited', variations: [VARIATIONS[0]!], projectId })).toBe(true);
        expect(await s.repo.updateFlag(m, tenantId, flag.id, 1, { name: 'stale' })).toBe(false);
        expect(await s.repo.updateFlag(m, otherTenantId, flag.id, 2, { name: 'not theirs' })).toBe(false);
        expect(await s.repo.updateEnv(m, tenantId, flag.id, 'production', 1, { enabled: true, offValue: true, salt: 's', rules: [{ id: 'r', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: ON }] })).toBe(true);
        expect(await s.repo.updateEnv(m, tenantId, flag.id, 'production', 2, { offValue: null, salt: null })).toBe(true);
        expect(await s.repo.updateEnv(m, tenantId, flag.id, 'production', 2, { enabled: false })).toBe(false);
      });
      expect(shape(await s.repo.findRow(tenantId, 'edited', 'production'))).toEqual({
        flag: expect.objectContaining({ name: 'Edited', variations: [VARIATIONS[0]], projectId, version: 2 }),
        env: { environmentKey: 'production', enabled: true, offValue: null, targets: [], rules: [{ id: 'r', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: ON }], prerequisites: [], salt: null, version: 3 },
      });
      expect((await s.repo.findRow(tenantId, 'edited', 'staging'))?.env.version).toBe(1);
    });

    it('measures definitions as evaluators hold them, by key then environment, storing each size so the next measure starts from it', async () => {
      const a = await s.tx((m) => s.repo.insert(m, tenantId, fields('b-second')));
      const b = await s.tx((m) => s.repo.insert(m, tenantId, fields('a-first')));
      await s.tx((m) => s.repo.insert(m, tenantId, fields('not-measured')));
      const first = await s.tx((m) => s.repo.measure(m, tenantId, [a.id, b.id]));
      expect(first.map((d) => [d.key, d.environment, d.before])).toEqual([
        ['a-first', 'development', 0],
        ['a-first', 'production', 0],
        ['a-first', 'staging', 0],
        ['b-second', 'development', 0],
        ['b-second', 'production', 0],
        ['b-second', 'staging', 0],
      ]);
      const row = (await s.repo.findRow(tenantId, 'a-first', 'production'))!;
      expect(first[1]!.bytes).toBe(flagDefinitionBytes(definitionOf(row.flag, row.env)));
      await s.tx((m) => s.repo.updateEnv(m, tenantId, b.id, 'staging', 1, { targets: [{ variationId: ON, values: ['alice', 'bob'] }] }));
      const again = await s.tx((m) => s.repo.measure(m, tenantId, [b.id]));
      const staging = again.find((d) => d.environment === 'staging')!;
      expect(staging.before).toBe(first[2]!.bytes);
      expect(staging.bytes).toBeGreaterThan(staging.before);
      expect(again.filter((d) => d.environment !== 'staging').every((d) => d.before === d.bytes)).toBe(true);
      expect(await s.tx((m) => s.repo.measure(m, tenantId, []))).toEqual([]);
    });

    it('tells the flags naming a key as a prerequisite in any environment, sorted, in the tenant only', async () => {
      const base = await s.tx((m) => s.repo.insert(m, tenantId, fields('base')));
      const zeta = await s.tx((m) => s.repo.insert(m, tenantId, fields('zeta')));
      const alpha = await s.tx((m) => s.repo.insert(m, tenantId, fields('alpha')));
      await s.tx(async (m) => {
        await s.repo.updateEnv(m, tenantId, zeta.id, 'staging', 1, { prerequisites: [{ key: 'base', variationId: ON }] });
        await s.repo.updateEnv(m, tenantId, alpha.id, 'production', 1, { prerequisites: [{ key: 'other', variationId: ON }, { key: 'base', variationId: OFF }] });
        await s.repo.updateEnv(m, tenantId, base.id, 'production', 1, { prerequisites: [{ key: 'base', variationId: ON }] });
      });
      const elsewhere = await s.tx((m) => s.repo.insert(m, otherTenantId, fields('elsewhere')));
      await s.tx((m) => s.repo.updateEnv(m, otherTenantId, elsewhere.id, 'production', 1, { prerequisites: [{ key: 'base', variationId: ON }] }));
      expect(await s.repo.dependents(tenantId, 'base')).toEqual(['alpha', 'zeta']);
      expect(await s.repo.dependents(tenantId, 'zeta')).toEqual([]);
    });

    it('lists a page at a time with a cursor, and by project; definitions of an environment by key', async () => {
      for (const key of ['one', 'two', 'three']) await s.tx((m) => s.repo.insert(m, tenantId, fields(key, key === 'two' ? { projectId } : {})));
      const first = await s.repo.list(tenantId, 'production', 1);
      expect(first).toHaveLength(2);
      const cursor = { at: first[0]!.flag.createdAt.toISOString(), id: first[0]!.flag.id };
      const rest = await s.repo.list(tenantId, 'production', 10, cursor);
      expect([first[0]!.flag.key, ...rest.map((r) => r.flag.key)].sort()).toEqual(['one', 'three', 'two']);
      expect((await s.repo.list(tenantId, 'production', 10, undefined, projectId)).map((r) => r.flag.key)).toEqual(['two']);
      expect(await s.repo.list(otherTenantId, 'production', 10)).toEqual([]);
      expect((await s.repo.definitions(tenantId, 'staging')).map((d) => [d.key, d.enabled])).toEqual([
        ['one', false],
        ['three', false],
        ['two', false],
      ]);
    });

    it('lists by lifecycle: stale when not evaluated (counted from creation), or serving one value, since the cutoff; pages with a cursor; the later evaluation kept', async () => {
      const DAY = 86_400_000;
      const targeted = async (key: string) => {
        const f = await s.tx((m) => s.repo.insert(m, tenantId, fields(key)));
        await s.tx(async (m) => {
          await s.repo.updateEnv(m, tenantId, f.id, 'production', 1, { enabled: true, targets: [{ variationId: ON, values: ['alice'] }] });
          await s.repo.measure(m, tenantId, [f.id]);
        });
        return f;
      };
      // quiet: serves two values, last evaluated 10 days ago; fresh: serves two, never evaluated; off: one value since now, evaluated now.
      await targeted('quiet');
      await targeted('fresh');
      const off = await s.tx((m) => s.repo.insert(m, tenantId, fields('off')));
      await s.tx((m) => s.repo.measure(m, tenantId, [off.id]));
      const now = s.now();
      await s.evaluated(tenantId, 'production', 'quiet', new Date(now.getTime() - 10 * DAY));
      await s.evaluated(tenantId, 'production', 'quiet', new Date(now.getTime() - 20 * DAY));
      await s.evaluated(tenantId, 'production', 'off', now);
      await s.evaluated(tenantId, 'staging', 'fresh', now);
      const keys = async (lifecycle: 'stale' | 'active', cutoff: Date) => (await s.repo.list(tenantId, 'production', 10, undefined, undefined, { lifecycle, cutoff })).map((r) => r.flag.key);
      const fiveDaysAgo = new Date(now.getTime() - 5 * DAY);
      expect(await keys('stale', fiveDaysAgo)).toEqual(['quiet']);
      expect(await keys('active', fiveDaysAgo)).toEqual(['fresh', 'off']);
      const inAnHour = new Date(now.getTime() + 3_600_000);
      expect(await keys('stale', inAnHour)).toEqual(['quiet', 'fresh', 'off']);
      expect(await keys('active', new Date(now.getTime() - 20 * DAY))).toEqual(['quiet', 'fresh', 'off']);
      // A page at a time: the cursor runs over the filtered rows.
      const first = await s.repo.list(tenantId, 'production', 1, undefined, undefined, { lifecycle: 'stale', cutoff: inAnHour });
      expect(first.map((r) => r.flag.key)).toEqual(['quiet', 'fresh']);
      const rest = await s.repo.list(tenantId, 'production', 1, { at: first[0]!.flag.createdAt.toISOString(), id: first[0]!.flag.id }, undefined, { lifecycle: 'stale', cutoff: inAnHour });
      expect(rest.map((r) => r.flag.key)).toEqual(['fresh', 'off']);
      // Rows carry their last evaluation (the later one kept) and since when they serve one value.
      const quiet = (await s.repo.findRow(tenantId, 'quiet', 'production'))!;
      expect(quiet.lastEvaluatedAt).toEqual(new Date(now.getTime() - 10 * DAY));
      expect(quiet.env.servingOneVariationSince).toBeNull();
      const offRow = (await s.repo.findRow(tenantId, 'off', 'production'))!;
      expect(offRow.env.servingOneVariationSince).toBeInstanceOf(Date);
      expect((await s.repo.findRow(tenantId, 'fresh', 'production'))!.lastEvaluatedAt).toBeNull();
      // Another tenant's list is its own.
      expect(await s.repo.list(otherTenantId, 'production', 10, undefined, undefined, { lifecycle: 'stale', cutoff: inAnHour })).toEqual([]);
    });

    it('since when one value is served: set when a write makes it so, kept while the same value is served, cleared when several are', async () => {
      const f = await s.tx((m) => s.repo.insert(m, tenantId, fields('rollout')));
      await s.tx((m) => s.repo.measure(m, tenantId, [f.id]));
      const since = (await s.repo.findRow(tenantId, 'rollout', 'production'))!.env.servingOneVariationSince!;
      expect(since).toBeInstanceOf(Date);
      // Still off, another description: the same value, the same since.
      await s.tx(async (m) => {
        await s.repo.updateFlag(m, tenantId, f.id, 1, { description: 'still off' });
        await s.repo.measure(m, tenantId, [f.id]);
      });
      expect((await s.repo.findRow(tenantId, 'rollout', 'production'))!.env.servingOneVariationSince).toEqual(since);
      // On, targeted: several values.
      await s.tx(async (m) => {
        await s.repo.updateEnv(m, tenantId, f.id, 'production', 1, { enabled: true, targets: [{ variationId: ON, values: ['alice'] }] });
        await s.repo.measure(m, tenantId, [f.id]);
      });
      expect((await s.repo.findRow(tenantId, 'rollout', 'production'))!.env.servingOneVariationSince).toBeNull();
      expect((await s.repo.findRow(tenantId, 'rollout', 'staging'))!.env.servingOneVariationSince).toEqual(since);
    });

    it("an import's statements: its lock, rows locked by key, flags inserted and replaced at their versions only", async () => {
      const kept = await s.tx((m) => s.repo.insert(m, tenantId, fields('kept')));
      await s.tx(async (m) => {
        expect(await s.repo.tryLockImport(m, tenantId)).toBe(true);
        const locked = await s.repo.lockRows(m, tenantId, ['zz-missing', 'kept'], 'production');
        expect([...locked.keys()]).toEqual(['kept']);
        const ids = await s.repo.insertMany(m, tenantId, [
          { key: 'new-b', type: 'string', defaultValue: 'x', variations: [{ id: ON, name: 'x', value: 'x', description: '', weight: 0 }], clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false } },
          { key: 'new-a', type: 'boolean', defaultValue: true, variations: VARIATIONS, clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false } },
        ]);
        expect([...ids.keys()].sort()).toEqual(['new-a', 'new-b']);
        const targeting = { enabled: true, offValue: null, targets: [], rules: [], prerequisites: [], salt: 'salty' };
        expect(
          await s.repo.replaceTargetingMany(m, tenantId, 'production', [
            { flagId: kept.id, expectedVersion: 1, ...targeting },
            { flagId: ids.get('new-a')!, expectedVersion: 1, ...targeting },
            { flagId: ids.get('new-b')!, expectedVersion: 7, ...targeting },
          ]),
        ).toBe(2);
        expect(
          await s.repo.updateImportedMany(m, tenantId, [
            { flagId: kept.id, expectedVersion: 1, variations: [VARIATIONS[1]!], clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: true } },
            { flagId: ids.get('new-a')!, expectedVersion: 5, variations: [], clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false } },
          ]),
        ).toBe(1);
        expect((await s.repo.envRowsOfMany(m, tenantId, [kept.id, ids.get('new-b')!])).map((e) => [e.environmentKey, e.version]).sort()).toEqual([
          ['development', 1],
          ['development', 1],
          ['production', 1],
          ['production', 2],
          ['staging', 1],
          ['staging', 1],
        ]);
      });
      const rows = await s.repo.findRows(tenantId, ['new-b', 'gone', 'kept', 'new-a'], 'production');
      expect(rows.map(shape)).toEqual([
        {
          flag: expect.objectContaining({ key: 'new-b', name: 'new-b', projectId: null, description: '', tags: [], type: 'string', clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false }, version: 1 }),
          env: expect.objectContaining({ enabled: false, salt: null, version: 1 }),
        },
        { flag: expect.objectContaining({ key: 'kept', variations: [VARIATIONS[1]], clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: true }, version: 2 }), env: expect.objectContaining({ enabled: true, salt: 'salty', version: 2 }) },
        { flag: expect.objectContaining({ key: 'new-a', variations: VARIATIONS, version: 1 }), env: expect.objectContaining({ enabled: true, salt: 'salty', version: 2 }) },
      ]);
      const envs = await s.repo.environmentsOfMany(tenantId, rows.map((r) => r.flag.id));
      expect(rows.map((r) => envs.get(r.flag.id))).toEqual([ENVIRONMENTS, ENVIRONMENTS, ENVIRONMENTS]);
    });

    it('deletes a flag in every environment; its audit trail stays, oldest first, per tenant and key', async () => {
      const flag = await s.tx((m) => s.repo.insert(m, tenantId, fields('doomed')));
      await s.tx(async (m) => {
        await s.repo.audit(m, { tenantId, flagKey: 'doomed', environmentKey: null, action: 'create', actor: 'user:a', changes: { key: 'doomed' } });
        await s.repo.auditMany(m, tenantId, [
          { flagKey: 'doomed', environmentKey: 'production', action: 'import', actor: 'user:b', changes: { n: 1 } },
          { flagKey: 'other', environmentKey: null, action: 'create', actor: 'user:b', changes: {} },
          { flagKey: 'doomed', environmentKey: null, action: 'delete', actor: 'user:c', changes: {} },
        ]);
        await s.repo.auditMany(m, tenantId, []);
        await s.repo.delete(m, tenantId, flag.id);
      });
      expect(await s.repo.findByKey(tenantId, 'doomed')).toBeNull();
      expect(await s.tx((m) => s.repo.envRows(m, tenantId, flag.id))).toEqual([]);
      const trail = await s.repo.auditTrail(tenantId, 'doomed');
      expect(trail.map((a) => [a.action, a.actor, a.environmentKey, a.changes])).toEqual([
        ['create', 'user:a', null, { key: 'doomed' }],
        ['import', 'user:b', 'production', { n: 1 }],
        ['delete', 'user:c', null, {}],
      ]);
      expect(await s.repo.auditTrail(otherTenantId, 'doomed')).toEqual([]);
    });

    it('a transaction that throws leaves nothing it wrote', async () => {
      const kept = await s.tx((m) => s.repo.insert(m, tenantId, fields('kept')));
      await expect(
        s.tx(async (m) => {
          await s.repo.insert(m, tenantId, fields('rolled-back'));
          await s.repo.updateFlag(m, tenantId, kept.id, 1, { name: 'rolled back' });
          await s.repo.measure(m, tenantId, [kept.id]);
          await s.repo.audit(m, { tenantId, flagKey: 'kept', environmentKey: null, action: 'update', actor: 'user:a', changes: {} });
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect(await s.repo.findByKey(tenantId, 'rolled-back')).toBeNull();
      expect((await s.repo.findByKey(tenantId, 'kept'))?.name).toBe('Flag kept');
      expect(await s.repo.auditTrail(tenantId, 'kept')).toEqual([]);
      expect((await s.tx((m) => s.repo.measure(m, tenantId, [kept.id]))).every((d) => d.before === 0)).toBe(true);
    });
  });
});
