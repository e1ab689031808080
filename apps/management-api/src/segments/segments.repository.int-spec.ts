import type { Clause } from '@flagship/flag-evaluation';
import { createDataSource, type DataSource, isUniqueViolation, type Tx, withTransaction } from '@flagship/persistence';
import { createTestDatabase, describeAgreement, type TestDatabase } from '@flagship/testing';
import { type NewSegmentFields, type SegmentRow, type SegmentsRepository, SqlSegmentsRepository } from './segments.repository';
import { FakeSegmentsRepository } from './segments.repository.fake';
import { seedTwoTenants } from '../testing/two-tenants';

const ENVIRONMENTS = ['development', 'production', 'staging'];

const fields = (key: string, more: Partial<NewSegmentFields> = {}): NewSegmentFields => ({
  key,
  name: `Segment ${key}`,
  description: '',
  definition: { included: ['u1'], excluded: [], includedContexts: [{ contextKind: 'organization', values: ['acme'] }], excludedContexts: [], rules: [] },
  definitionBytes: 100,
  ...more,
});
// Cast until the evaluator's Operator type names segmentMatch (issue 33's evaluator half).
const matching = (...keys: string[]): Clause => ({ attribute: '', op: 'segmentMatch', values: keys });

/** A row without what each store generates, to compare across them. */
const shape = (r: SegmentRow | null) => {
  if (r === null) return null;
  const { id: _id, createdAt: _c, updatedAt: _u, ...rest } = r;
  return rest;
};

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the segment
 * service's unit spec, which runs on the fake, proves what the real one does.
 */
describe('SegmentsRepository: the fake agrees with Postgres', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let tenantId: string;
  let otherTenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource({ url: db.url, poolSize: 2, entities: [] });
    await ds.initialize();
    [tenantId, otherTenantId] = await seedTwoTenants(ds, ENVIRONMENTS);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  type Subject = {
    repo: SegmentsRepository;
    tx: <T>(work: (m: Tx) => Promise<T>) => Promise<T>;
    /** A flag whose rules in `environment` are these (in every other environment it has none). */
    flag: (tenant: string, environment: string, key: string, rules: Array<{ clauses: Clause[] }>) => Promise<void>;
    reset: () => Promise<void>;
  };

  const real = (): Subject => ({
    repo: new SqlSegmentsRepository(ds),
    tx: (work) => withTransaction(ds, work),
    flag: async (tenant, environment, key, rules) => {
      const [{ id }] = (await ds.query(
        `INSERT INTO flags (tenant_id, key, name, type, default_value, variations, client_side_availability) VALUES ($1, $2, $2, 'boolean', 'false', '[]', '{"usingEnvironmentId":false,"usingMobileKey":false}') RETURNING id`,
        [tenant, key],
      )) as Array<{ id: string }>;
      await ds.query(`INSERT INTO flag_environments (tenant_id, flag_id, environment_key, rules) VALUES ($1, $2, $3, $4::jsonb)`, [
        tenant,
        id,
        environment,
        JSON.stringify(rules.map((r, i) => ({ id: `r${i}`, variationId: 'v', ...r }))),
      ]);
    },
    reset: async () => {
      await ds.query(`DELETE FROM segments`);
      await ds.query(`DELETE FROM segment_audit`);
      await ds.query(`DELETE FROM flags`);
    },
  });
  const fake = (): Subject => {
    const repo = new FakeSegmentsRepository();
    return { repo, tx: (work) => repo.transactions.run(work), flag: async (t, e, k, rules) => repo.useFlag(t, e, k, rules), reset: async () => undefined };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('inserts a segment in one environment of its tenant at version 1; other environments and tenants see none', async () => {
      const row = await s.tx((m) => s.repo.insert(m, tenantId, 'staging', fields('beta')));
      expect(shape(row)).toEqual({ tenantId, environment: 'staging', version: 1, ...fields('beta') });
      expect(shape(await s.repo.find(tenantId, 'staging', 'beta'))).toEqual(shape(row));
      expect(await s.repo.find(tenantId, 'production', 'beta')).toBeNull();
      expect(await s.repo.find(otherTenantId, 'staging', 'beta')).toBeNull();
      expect(await s.repo.definitions(tenantId, 'staging')).toEqual([{ key: 'beta', name: 'Segment beta', ...fields('beta').definition, version: 1 }]);
      expect(await s.repo.definitions(otherTenantId, 'staging')).toEqual([]);
    });

    it('refuses a key taken in the tenant and environment as a unique violation, writing nothing of that transaction; another environment or tenant may take it', async () => {
      await s.tx((m) => s.repo.insert(m, tenantId, 'production', fields('taken')));
      const err = await s
        .tx(async (m) => {
          await s.repo.insert(m, tenantId, 'production', fields('first-of-two'));
          return s.repo.insert(m, tenantId, 'production', fields('taken'));
        })
        .catch((e: unknown) => e);
      expect(isUniqueViolation(err)).toBe(true);
      expect(await s.repo.find(tenantId, 'production', 'first-of-two')).toBeNull();
      await s.tx((m) => s.repo.insert(m, tenantId, 'staging', fields('taken')));
      await s.tx((m) => s.repo.insert(m, otherTenantId, 'production', fields('taken')));
      expect((await s.repo.definitions(otherTenantId, 'production')).map((d) => d.key)).toEqual(['taken']);
    });

    it('updates only at the expected version, bumping it, and only the tenant’s own row; deletes only its own', async () => {
      await s.tx((m) => s.repo.insert(m, tenantId, 'production', fields('edited')));
      const definition = { included: [], excluded: ['u9'], includedContexts: [], excludedContexts: [], rules: [{ id: 'r', clauses: [], weight: 5000 }], salt: 'pepper' };
      await s.tx(async (m) => {
        expect(await s.repo.update(m, tenantId, 'production', 'edited', 1, { name: 'Edited', definition, definitionBytes: 42 })).toBe(true);
        expect(await s.repo.update(m, tenantId, 'production', 'edited', 1, { name: 'stale' })).toBe(false);
        expect(await s.repo.update(m, otherTenantId, 'production', 'edited', 2, { name: 'not theirs' })).toBe(false);
        expect(await s.repo.update(m, tenantId, 'production', 'edited', 2, { description: 'd' })).toBe(true);
      });
      expect(shape(await s.repo.find(tenantId, 'production', 'edited'))).toEqual({ tenantId, environment: 'production', key: 'edited', name: 'Edited', description: 'd', definition, definitionBytes: 42, version: 3 });
      expect(await s.tx((m) => s.repo.delete(m, otherTenantId, 'production', 'edited'))).toBe(false);
      expect(await s.tx((m) => s.repo.delete(m, tenantId, 'staging', 'edited'))).toBe(false);
      expect(await s.tx((m) => s.repo.delete(m, tenantId, 'production', 'edited'))).toBe(true);
      expect(await s.repo.find(tenantId, 'production', 'edited')).toBeNull();
    });

    it('pages oldest first, each row once, within the tenant and environment', async () => {
      for (const key of ['a', 'b', 'c', 'd', 'e']) await s.tx((m) => s.repo.insert(m, tenantId, 'production', fields(key)));
      await s.tx((m) => s.repo.insert(m, otherTenantId, 'production', fields('theirs')));
      await s.tx((m) => s.repo.insert(m, tenantId, 'staging', fields('elsewhere')));
      const seen: string[] = [];
      let after: { at: string; id: string } | undefined;
      for (;;) {
        const page = await s.repo.list(tenantId, 'production', 2, after);
        seen.push(...page.slice(0, 2).map((r) => r.key));
        if (page.length <= 2) break;
        after = { at: page[1]!.createdAt.toISOString(), id: page[1]!.id };
      }
      expect([...seen].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(seen).toHaveLength(5);
    });

    it('finds the flags and segments of the environment that name a segment through segmentMatch, in any clause of any rule', async () => {
      await s.flag(tenantId, 'production', 'uses-it-second', [{ clauses: [] }, { clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }, matching('other', 'beta')] }]);
      await s.flag(tenantId, 'production', 'a-uses-it', [{ clauses: [matching('beta')] }]);
      await s.flag(tenantId, 'production', 'names-another', [{ clauses: [matching('gamma')] }]);
      await s.flag(tenantId, 'production', 'in-a-value', [{ clauses: [{ attribute: 'beta', op: 'in', values: ['beta'] }] }]);
      await s.flag(tenantId, 'staging', 'elsewhere', [{ clauses: [matching('beta')] }]);
      await s.flag(otherTenantId, 'production', 'theirs', [{ clauses: [matching('beta')] }]);
      expect(await s.repo.flagsUsing(tenantId, 'production', 'beta')).toEqual(['a-uses-it', 'uses-it-second']);
      expect(await s.repo.flagsUsing(otherTenantId, 'production', 'beta')).toEqual(['theirs']);
      const nested = (key: string, ...named: string[]) => fields(key, { definition: { ...fields(key).definition, rules: [{ id: 'r', clauses: [matching(...named)] }] } });
      await s.tx((m) => s.repo.insert(m, tenantId, 'production', nested('outer', 'beta')));
      await s.tx((m) => s.repo.insert(m, tenantId, 'production', nested('beta', 'beta')));
      await s.tx((m) => s.repo.insert(m, tenantId, 'staging', nested('outer-elsewhere', 'beta')));
      expect(await s.repo.segmentsUsing(tenantId, 'production', 'beta')).toEqual(['outer']);
      expect(await s.repo.segmentsUsing(otherTenantId, 'production', 'beta')).toEqual([]);
    });

    it('upserts many at once: new keys created at version 1, existing ones replaced and bumped, other environments and tenants untouched; lockMany reads the existing in key order', async () => {
      await s.tx((m) => s.repo.insert(m, tenantId, 'production', fields('kept', { name: 'before' })));
      await s.tx((m) => s.repo.insert(m, tenantId, 'staging', fields('kept', { name: 'staging' })));
      await s.tx((m) => s.repo.insert(m, otherTenantId, 'production', fields('kept', { name: 'theirs' })));
      const locked = await s.tx((m) => s.repo.lockMany(m, tenantId, 'production', ['zz-new', 'kept']));
      expect([...locked.keys()]).toEqual(['kept']);
      const replaced = fields('kept', { name: 'after', definitionBytes: 7, definition: { ...fields('kept').definition, excluded: ['x'] } });
      await s.tx((m) => s.repo.upsertMany(m, tenantId, 'production', [fields('zz-new'), replaced]));
      expect(shape(await s.repo.find(tenantId, 'production', 'kept'))).toEqual({ tenantId, environment: 'production', version: 2, ...replaced });
      expect(shape(await s.repo.find(tenantId, 'production', 'zz-new'))).toEqual({ tenantId, environment: 'production', version: 1, ...fields('zz-new') });
      expect((await s.repo.find(tenantId, 'staging', 'kept'))?.name).toBe('staging');
      expect((await s.repo.find(otherTenantId, 'production', 'kept'))?.name).toBe('theirs');
      await s.tx((m) =>
        s.repo.auditMany(m, tenantId, [
          { environment: 'production', segmentKey: 'zz-new', action: 'import', actor: 'user:a', changes: { n: 1 } },
          { environment: 'production', segmentKey: 'kept', action: 'import', actor: 'user:a', changes: {} },
        ]),
      );
      expect((await s.repo.auditTrail(tenantId, 'production', 'zz-new')).map((a) => [a.action, a.changes])).toEqual([['import', { n: 1 }]]);
    });

    it('keeps an audit trail per tenant, environment and segment, oldest first', async () => {
      await s.tx(async (m) => {
        await s.repo.audit(m, tenantId, { environment: 'production', segmentKey: 'beta', action: 'create', actor: 'user:a', changes: { name: 'B' } });
        await s.repo.audit(m, tenantId, { environment: 'production', segmentKey: 'beta', action: 'update', actor: 'user:b', changes: {} });
        await s.repo.audit(m, tenantId, { environment: 'staging', segmentKey: 'beta', action: 'create', actor: 'user:a', changes: {} });
        await s.repo.audit(m, otherTenantId, { environment: 'production', segmentKey: 'beta', action: 'create', actor: 'user:x', changes: {} });
      });
      const trail = await s.repo.auditTrail(tenantId, 'production', 'beta');
      expect(trail.map((a) => [a.environment, a.segmentKey, a.action, a.actor, a.changes])).toEqual([
        ['production', 'beta', 'create', 'user:a', { name: 'B' }],
        ['production', 'beta', 'update', 'user:b', {}],
      ]);
    });
  });
});
