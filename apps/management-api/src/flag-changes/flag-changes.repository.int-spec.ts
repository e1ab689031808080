import { createDataSource, type DataSource, type Tx, withTransaction } from '@flagship/persistence';
import { createTestDatabase, describeAgreement, type TestDatabase } from '@flagship/testing';
import { type FlagChangesRepository, LIST_LIMIT, type NewScheduledChange, SqlFlagChangesRepository } from './flag-changes.repository';
import { FakeFlagChangesRepository } from './flag-changes.repository.fake';
import { seedTwoTenants } from '../testing/two-tenants';

const at = (iso: string) => new Date(iso);
const schedule = (flagKey: string, executeAt: string, more: Partial<NewScheduledChange> = {}): NewScheduledChange => ({
  environment: 'production',
  flagKey,
  patch: { enabled: true },
  base: { enabled: false },
  executeAt: at(executeAt),
  author: 'user:alice',
  approvedBy: null,
  ...more,
});

/** The same cases against the real repository and its in-memory twin, so the services' unit specs on the fake prove what the real one does. */
describe('FlagChangesRepository: the fake agrees with Postgres', () => {
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

  type Subject = { repo: FlagChangesRepository; tx: <T>(work: (m: Tx) => Promise<T>) => Promise<T>; reset: () => Promise<void> };
  const real = (): Subject => ({
    repo: new SqlFlagChangesRepository(ds),
    tx: (work) => withTransaction(ds, work),
    reset: async () => {
      await ds.query('DELETE FROM change_requests');
      await ds.query('DELETE FROM scheduled_changes');
    },
  });
  const fake = (): Subject => {
    const repo = new FakeFlagChangesRepository();
    return { repo, tx: (work) => repo.transactions.run(work), reset: async () => undefined };
  };

  describeAgreement({ postgres: real, memory: fake }, (s) => {
    it('change requests: stored as given, pending; updated, commented; listed newest first per flag and environment; another tenant’s reads as missing', async () => {
      const { repo, tx } = s();
      const first = await tx((m) => repo.insertRequest(m, tenantId, { environment: 'production', flagKey: 'f', patch: { enabled: true, rules: [] }, baseVersion: '"1.1"', executeAt: null, author: 'user:alice', comments: [{ author: 'user:alice', body: 'hi', at: '2026-03-01T08:00:00.000Z' }] }));
      expect(first).toMatchObject({ tenantId, environment: 'production', flagKey: 'f', patch: { enabled: true, rules: [] }, baseVersion: '"1.1"', state: 'pending', decidedBy: null, comments: [{ author: 'user:alice', body: 'hi' }] });
      const second = await tx((m) => repo.insertRequest(m, tenantId, { environment: 'production', flagKey: 'f', patch: { enabled: false }, baseVersion: '"1.1"', executeAt: at('2026-04-01T09:00:00Z'), author: 'user:bob', comments: [] }));
      await tx((m) => repo.insertRequest(m, tenantId, { environment: 'staging', flagKey: 'f', patch: {}, baseVersion: '"1.1"', executeAt: null, author: 'user:bob', comments: [] }));
      await tx(async (m) => {
        await repo.updateRequest(m, tenantId, first.id, { state: 'approved', decidedBy: 'user:bob', decidedAt: at('2026-03-01T09:00:00Z') });
        await repo.addComment(m, tenantId, first.id, { author: 'user:bob', body: 'ok', at: '2026-03-01T09:00:00.000Z' });
        await repo.updateRequest(m, otherTenantId, second.id, { state: 'rejected' });
      });
      const found = await tx((m) => repo.findRequest(tenantId, 'production', 'f', first.id, m));
      expect(found).toMatchObject({ state: 'approved', decidedBy: 'user:bob', decidedAt: at('2026-03-01T09:00:00Z'), comments: [{ body: 'hi' }, { body: 'ok' }] });
      expect((await repo.findRequest(tenantId, 'production', 'f', second.id))?.executeAt).toEqual(at('2026-04-01T09:00:00Z'));
      expect((await repo.findRequest(tenantId, 'production', 'f', second.id))?.state).toBe('pending');
      expect(await repo.findRequest(otherTenantId, 'production', 'f', first.id)).toBeNull();
      expect(await repo.findRequest(tenantId, 'staging', 'f', first.id)).toBeNull();
      expect(await repo.findRequest(tenantId, 'production', 'f', 'not-a-uuid')).toBeNull();
      expect((await repo.listRequests(tenantId, 'production', 'f')).map((r) => r.id)).toEqual([second.id, first.id]);
      expect(await tx((m) => repo.countOpenRequests(m, tenantId, 'production', 'f'))).toBe(2);
      await tx((m) => repo.updateRequest(m, tenantId, second.id, { state: 'stale' }));
      expect(await tx((m) => repo.countOpenRequests(m, tenantId, 'production', 'f'))).toBe(1);
    });

    it('scheduled changes: claimDue takes the earliest due one of any tenant, skipping what is not due or not scheduled; finish records the outcome', async () => {
      const { repo, tx } = s();
      const later = await tx((m) => repo.insertScheduled(m, tenantId, schedule('f', '2026-03-01T10:00:00Z')));
      const earlier = await tx((m) => repo.insertScheduled(m, otherTenantId, schedule('g', '2026-03-01T09:00:00Z', { approvedBy: 'user:bob', base: { rules: [{ id: 'r', clauses: [] }] } })));
      const cancelled = await tx((m) => repo.insertScheduled(m, tenantId, schedule('f', '2026-03-01T08:00:00Z')));
      await tx((m) => repo.finishScheduled(m, tenantId, cancelled.id, 'cancelled', null, at('2026-03-01T07:00:00Z')));
      expect(await tx((m) => repo.claimDue(m, at('2026-03-01T08:59:59Z')))).toBeNull();
      expect(await tx((m) => repo.claimDue(m, at('2026-03-01T11:00:00Z')))).toMatchObject({ id: earlier.id, tenantId: otherTenantId, approvedBy: 'user:bob', base: { rules: [{ id: 'r', clauses: [] }] } });
      await tx((m) => repo.finishScheduled(m, otherTenantId, earlier.id, 'failed', 'conflict: enabled', at('2026-03-01T11:00:00Z')));
      expect(await tx((m) => repo.claimScheduled(m, otherTenantId, earlier.id))).toBeNull();
      expect((await tx((m) => repo.claimDue(m, at('2026-03-01T11:00:00Z'))))?.id).toBe(later.id);
      expect((await tx((m) => repo.claimScheduled(m, tenantId, later.id)))?.id).toBe(later.id);
      expect(await tx((m) => repo.claimScheduled(m, otherTenantId, later.id))).toBeNull();
      expect(await repo.findScheduled(otherTenantId, 'production', 'g', earlier.id)).toMatchObject({ state: 'failed', reason: 'conflict: enabled', finishedAt: at('2026-03-01T11:00:00Z') });
      expect((await repo.listScheduled(tenantId, 'production', 'f')).map((r) => [r.id, r.state])).toEqual([
        [later.id, 'scheduled'],
        [cancelled.id, 'cancelled'],
      ]);
      expect(await tx((m) => repo.countScheduled(m, tenantId, 'production', 'f'))).toBe(1);
      expect(await repo.findScheduled(tenantId, 'production', 'g', earlier.id)).toBeNull();
    });

    it(`lockTenantAndCountOpen counts the tenant's open requests and schedules together; lists stop at ${LIST_LIMIT}`, async () => {
      const { repo, tx } = s();
      const req = (flagKey: string) => (m: Tx) => repo.insertRequest(m, tenantId, { environment: 'production', flagKey, patch: {}, baseVersion: '"1.1"', executeAt: null, author: 'user:a', comments: [] });
      await tx(async (m) => {
        for (let i = 0; i <= LIST_LIMIT; i++) await req('many')(m);
      });
      const rejected = await tx(req('f'));
      await tx((m) => repo.updateRequest(m, tenantId, rejected.id, { state: 'rejected' }));
      await tx((m) => repo.insertScheduled(m, tenantId, schedule('f', '2026-03-01T10:00:00Z')));
      const done = await tx((m) => repo.insertScheduled(m, tenantId, schedule('f', '2026-03-01T11:00:00Z')));
      await tx((m) => repo.finishScheduled(m, tenantId, done.id, 'applied', null, at('2026-03-01T11:00:00Z')));
      await tx((m) => repo.insertScheduled(m, otherTenantId, schedule('f', '2026-03-01T10:00:00Z')));
      expect(await tx((m) => repo.lockTenantAndCountOpen(m, tenantId))).toBe(LIST_LIMIT + 2);
      expect(await tx((m) => repo.lockTenantAndCountOpen(m, otherTenantId))).toBe(1);
      expect(await repo.listRequests(tenantId, 'production', 'many')).toHaveLength(LIST_LIMIT);
    });
  });
});
