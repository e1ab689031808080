import { createDataSource, type DataSource, isUniqueViolation, type Tx, withTransaction } from '@flagship/persistence';
import { createTestDatabase, describeAgreement, type TestDatabase } from '@flagship/testing';
import { seedTwoTenants } from '../testing/two-tenants';
import { type BindingFields, type BindingRow, type GatewayBindingsRepository, SqlGatewayBindingsRepository } from './gateway-bindings.repository';
import { FakeGatewayBindingsRepository } from './gateway-bindings.repository.fake';

const fields = (more: Partial<BindingFields> = {}): BindingFields => ({
  flagKey: 'model-rollout',
  modelAlias: null,
  environment: 'production',
  rolloutPlan: null,
  spendCaps: null,
  ...more,
});

/** A row without what each store generates, to compare across them. */
const shape = (r: BindingRow | null) => {
  if (r === null) return null;
  const { createdAt: _c, updatedAt: _u, ...rest } = r;
  return rest;
};

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the binding
 * service's unit spec, which runs on the fake, proves what the real one does.
 */
describe('GatewayBindingsRepository: the fake agrees with Postgres', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let tenantId: string;
  let otherTenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource({ url: db.url, poolSize: 2, entities: [] });
    await ds.initialize();
    [tenantId, otherTenantId] = await seedTwoTenants(ds, ['production', 'staging']);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  type Subject = { repo: GatewayBindingsRepository; tx: <T>(work: (m: Tx) => Promise<T>) => Promise<T>; reset: () => Promise<void> };
  const real = (): Subject => ({
    repo: new SqlGatewayBindingsRepository(ds),
    tx: (work) => withTransaction(ds, work),
    reset: async () => {
      await ds.query('DELETE FROM gateway_bindings');
      await ds.query('DELETE FROM gateway_binding_audit');
    },
  });
  const fake = (): Subject => {
    const repo = new FakeGatewayBindingsRepository();
    return { repo, tx: (work) => repo.transactions.run(work), reset: async () => undefined };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it("inserts a binding at version 1 with its JSON fields as written; another tenant sees none", async () => {
      const plan = { stages: [{ percent: 5, minRequests: 100 }, { percent: 100 }], guards: { errorRate: 0.05, p95LatencyMs: 2000 } };
      const row = await s.tx((m) => s.repo.insert(m, tenantId, 'core', fields({ modelAlias: 'fake-chat-1', environment: 'staging', rolloutPlan: plan, spendCaps: { b: 5_000_000 } })));
      expect(shape(row)).toEqual({ tenantId, productKey: 'core', flagKey: 'model-rollout', modelAlias: 'fake-chat-1', environment: 'staging', rolloutPlan: plan, spendCaps: { b: 5_000_000 }, version: 1 });
      expect(shape(await s.repo.find(tenantId, 'core'))).toEqual(shape(row));
      expect(await s.repo.find(otherTenantId, 'core')).toBeNull();
      expect(await s.repo.list(otherTenantId)).toEqual([]);
    });

    it('refuses a second binding of the product key in the tenant as a unique violation, undoing its transaction; another tenant may bind it', async () => {
      await s.tx((m) => s.repo.insert(m, tenantId, 'core', fields()));
      const err = await s
        .tx(async (m) => {
          await s.repo.insert(m, tenantId, 'insights', fields());
          return s.repo.insert(m, tenantId, 'core', fields());
        })
        .catch((e: unknown) => e);
      expect(isUniqueViolation(err)).toBe(true);
      expect(await s.repo.find(tenantId, 'insights')).toBeNull();
      await s.tx((m) => s.repo.insert(m, otherTenantId, 'core', fields()));
      expect((await s.repo.list(tenantId)).map((r) => r.productKey)).toEqual(['core']);
    });

    it('updates only at the expected version, bumping it, and only its own tenant’s row; lists by product key', async () => {
      await s.tx((m) => s.repo.insert(m, tenantId, 'insights', fields()));
      await s.tx((m) => s.repo.insert(m, tenantId, 'core', fields()));
      const updated = await s.tx((m) => s.repo.update(m, tenantId, 'core', 1, fields({ flagKey: 'other', spendCaps: { a: 1 } })));
      expect(shape(updated)).toMatchObject({ flagKey: 'other', spendCaps: { a: 1 }, version: 2 });
      expect(await s.tx((m) => s.repo.update(m, tenantId, 'core', 1, fields()))).toBeNull();
      expect(await s.tx((m) => s.repo.update(m, otherTenantId, 'core', 2, fields()))).toBeNull();
      expect((await s.tx((m) => s.repo.lock(m, tenantId, 'core')))?.version).toBe(2);
      expect((await s.repo.list(tenantId)).map((r) => [r.productKey, r.version])).toEqual([
        ['core', 2],
        ['insights', 1],
      ]);
    });

    it('deletes only its own tenant’s binding, once; keeps an audit trail per product key, oldest first', async () => {
      await s.tx((m) => s.repo.insert(m, tenantId, 'core', fields()));
      expect(await s.tx((m) => s.repo.delete(m, otherTenantId, 'core'))).toBe(false);
      expect(await s.tx((m) => s.repo.delete(m, tenantId, 'core'))).toBe(true);
      expect(await s.tx((m) => s.repo.delete(m, tenantId, 'core'))).toBe(false);
      await s.tx(async (m) => {
        await s.repo.audit(m, tenantId, { productKey: 'core', action: 'create', actor: 'user:a', changes: { flagKey: 'f' } });
        await s.repo.audit(m, tenantId, { productKey: 'core', action: 'delete', actor: 'user:b', changes: {} });
        await s.repo.audit(m, otherTenantId, { productKey: 'core', action: 'create', actor: 'user:c', changes: {} });
      });
      expect((await s.repo.auditTrail(tenantId, 'core')).map(({ createdAt: _c, ...a }) => a)).toEqual([
        { productKey: 'core', action: 'create', actor: 'user:a', changes: { flagKey: 'f' } },
        { productKey: 'core', action: 'delete', actor: 'user:b', changes: {} },
      ]);
    });
  });
});
