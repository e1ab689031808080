/** The ledger's other statements (grants, balance and usage reads, the meter outbox), each scoped by tenant. */
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';
import { CreditsRepository } from './credits.repository';
import { balanceOf, createTenant, ledgerRows } from './testing/ledger.fixture';
import { UsageLedgerRepository } from './usage-ledger.repository';
import { UsageMeterRepository } from './usage-meter.repository';
import { UsageRepository } from './usage.repository';

let db: TestDatabase;
let ds: DataSource;

beforeAll(async () => {
  db = await createTestDatabase();
  ds = createDataSource({ url: db.url, poolSize: 2 });
  await ds.initialize();
});

afterAll(async () => {
  await ds?.destroy();
  await db?.drop();
});

/** A request reserved and settled through the gateway's statements: one `succeeded` row of `debit`. */
async function paidRequest(tenantId: string, debit: number): Promise<string> {
  const repo = new UsageLedgerRepository(ds);
  const id = randomUUID();
  const base = { id, tenantId, clientId: 'ffc_repoSpec', productKey: 'core', provider: 'inhouse', model: 'fake-chat-1', endpoint: 'chat.completions' };
  expect(await repo.reserve([{ ...base, stream: false, estimate: 100, zeroRatedReason: null, requestId: `req-${id}`, inputPer1k: 1000, outputPer1k: 2000, cachedInputPer1k: null }])).toEqual([true]);
  expect(await repo.settle([{ id, tenantId, status: 'succeeded', inputTokens: 3, outputTokens: 4, cachedTokens: 0, debit, provider: 'inhouse', latencyMs: 5, usageEstimated: false, errorCode: null }])).toEqual([true]);
  return id;
}

describe('CreditsRepository (real Postgres)', () => {
  const credits = () => new CreditsRepository(ds);

  it('records each grant and adds it to the balance, creating the balance row on the first grant', async () => {
    const tenant = await createTenant(ds);
    expect(await credits().balanceOf(tenant)).toBeNull();
    expect(await ds.transaction((m) => credits().grantCredits(m, tenant, { amount: 500, reason: 'welcome', grantedBy: 'admin-1' }))).toEqual({ balance: 500, reserved: 0 });
    expect(await ds.transaction((m) => credits().grantCredits(m, tenant, { amount: 250, reason: 'stripe checkout cs_1', grantedBy: 'stripe' }))).toEqual({ balance: 750, reserved: 0 });
    expect(await credits().balanceOf(tenant)).toEqual({ balance: 750, reserved: 0 });
    const grants = await ds.query<Array<{ amount: string; reason: string; granted_by: string }>>(
      'SELECT amount::text AS amount, reason, granted_by FROM credit_grants WHERE tenant_id = $1 ORDER BY id',
      [tenant],
    );
    expect(grants).toEqual([{ amount: '500', reason: 'welcome', granted_by: 'admin-1' }, { amount: '250', reason: 'stripe checkout cs_1', granted_by: 'stripe' }]);
    expect(await ds.transaction((m) => credits().hasGrant(m, tenant, 'welcome'))).toBe(true);
    expect(await ds.transaction((m) => credits().hasGrant(m, tenant, 'other'))).toBe(false);
    // Another tenant's grants are not this one's.
    const other = await createTenant(ds);
    expect(await ds.transaction((m) => credits().hasGrant(m, other, 'welcome'))).toBe(false);
    expect(await credits().balanceOf(other)).toBeNull();
  });

  it('a grant rolled back with its transaction leaves neither the grant nor the balance', async () => {
    const tenant = await createTenant(ds, { balance: 10 });
    await expect(
      ds.transaction(async (m) => {
        await credits().grantCredits(m, tenant, { amount: 90, reason: 'undone', grantedBy: 'admin-1' });
        throw new Error('later step failed');
      }),
    ).rejects.toThrow('later step failed');
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 10, reserved: 0 });
    expect(await ds.query('SELECT 1 FROM credit_grants WHERE tenant_id = $1', [tenant])).toEqual([]);
  });
});

describe('UsageRepository and UsageMeterRepository (real Postgres)', () => {
  it('reads a tenant\'s rows as UsageRow (credits as numbers), never another tenant\'s', async () => {
    const tenant = await createTenant(ds, { balance: 1000 });
    const other = await createTenant(ds, { balance: 1000 });
    const id = await paidRequest(tenant, 42);
    await paidRequest(other, 7);
    const rows = await new UsageRepository(ds).list(tenant, {}, 10);
    expect(rows).toEqual([
      expect.objectContaining({ id, tenantId: tenant, clientId: 'ffc_repoSpec', status: 'succeeded', reserved: 100, debit: 42, zeroRated: false, inputTokens: 3, outputTokens: 4, latencyMs: 5, requestId: `req-${id}` }),
    ]);
    expect(rows[0]!.createdAt).toBeInstanceOf(Date);
    expect(rows[0]!.completedAt).toBeInstanceOf(Date);
    expect(await new UsageRepository(ds).groups(tenant, {})).toEqual([{ product_key: 'core', model: 'fake-chat-1', requests: '1', input_tokens: '3', output_tokens: '4', debit: '42' }]);
  });

  it('the meter claims billable rows as UsageRow and marks a row reported only under its own tenant', async () => {
    const tenant = await createTenant(ds, { balance: 1000 });
    const other = await createTenant(ds, { balance: 1000 });
    const id = await paidRequest(tenant, 30);
    const meter = new UsageMeterRepository();
    await ds.transaction(async (m) => {
      const claimed = (await meter.claim(m, 1000)).filter((r) => r.id === id);
      expect(claimed).toEqual([expect.objectContaining({ id, tenantId: tenant, productKey: 'core', debit: 30 })]);
      // Named under another tenant, the row is not marked.
      await meter.markReported(m, [{ id, tenantId: other }]);
    });
    expect((await ledgerRows(ds, tenant))[0]!).toMatchObject({ id, meter_reported_at: null });
    await ds.transaction((m) => meter.markReported(m, [{ id, tenantId: tenant }]));
    expect((await ledgerRows(ds, tenant))[0]!.meter_reported_at).not.toBeNull();
    await ds.transaction(async (m) => expect((await meter.claim(m, 1000)).map((r) => r.id)).not.toContain(id));
  });
});
