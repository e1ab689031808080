import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';
import { balanceOf, createTenant, ledgerRows } from '../testing/gateway.fixture';
import { type Reservation, UsageLedgerRepository } from './usage-ledger.repository';

/**
 * A batch of one reserves through its own short statement (RESERVE_ONE), larger batches through the
 * batch statement: both must admit, hold and write exactly alike, whatever mix of billable and
 * zero-rated requests, tenants with and without credit, arrives.
 */
describe('UsageLedgerRepository.reserve (real Postgres)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: UsageLedgerRepository;

  beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource({ url: db.url, poolSize: 4 });
    await ds.initialize();
    repo = new UsageLedgerRepository(ds);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  const reservation = (tenantId: string, estimate: number, zeroRatedReason: string | null = null): Reservation => ({
    id: randomUUID(),
    tenantId,
    clientId: 'ffc_ledgerSpec',
    productKey: 'core',
    provider: 'inhouse',
    model: 'fake-chat-1',
    endpoint: 'chat.completions',
    stream: false,
    estimate,
    zeroRatedReason,
    requestId: `req-${randomUUID()}`,
  });

  /** Each reservation alone (batches of one), or all together (one batch). */
  const shapes: Array<[string, (rs: Reservation[]) => Promise<boolean[]>]> = [
    ['one at a time', async (rs) => {
      const out: boolean[] = [];
      for (const r of rs) out.push(...(await repo.reserve([r])));
      return out;
    }],
    ['in one batch', (rs) => repo.reserve(rs)],
  ];

  it.each(shapes)('%s: admits while credit is left, holds each estimate, and writes one pending row per admission', async (_shape, reserve) => {
    // 250 available: the first two (100 each) fit, the third is admitted on the 50 left (credit left > 0), the fourth is not.
    const tenant = await createTenant(ds, { balance: 250 });
    const rs = [reservation(tenant, 100), reservation(tenant, 100), reservation(tenant, 100), reservation(tenant, 100)];
    expect(await reserve(rs)).toEqual([true, true, true, false]);
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 250, reserved: 300 });
    const rows = await ledgerRows(ds, tenant);
    expect(rows.map((r) => r.id).sort()).toEqual(rs.slice(0, 3).map((r) => r.id).sort());
    for (const row of rows) {
      expect(row).toMatchObject({ status: 'pending', reserved: '100', zero_rated: false, zero_rated_reason: null, provider: 'inhouse', requested_provider: 'inhouse', client_id: 'ffc_ledgerSpec' });
    }
    expect(rows.map((r) => r.request_id).sort()).toEqual(rs.slice(0, 3).map((r) => r.requestId).sort());
  });

  it.each(shapes)('%s: a zero-rated request is always admitted and holds nothing; a tenant with no balance row is refused', async (_shape, reserve) => {
    const broke = await createTenant(ds, { balance: 0 });
    const noRow = await createTenant(ds);
    const rs = [reservation(broke, 100, 'internal_suite:suite_a'), reservation(broke, 100), reservation(noRow, 1)];
    expect(await reserve(rs)).toEqual([true, false, false]);
    expect(await balanceOf(ds, broke)).toEqual({ balance: 0, reserved: 0 });
    const [row, ...others] = await ledgerRows(ds, broke);
    expect(others).toEqual([]);
    expect(row).toMatchObject({ id: rs[0]!.id, status: 'pending', reserved: '0', zero_rated: true, zero_rated_reason: 'internal_suite:suite_a' });
    expect(await ledgerRows(ds, noRow)).toEqual([]);
  });

  it('one-at-a-time reservations racing on one connection each never hold more than the credit left allows', async () => {
    // 10 available, estimate 3: admissions at 10, 7, 4, 1 left; then refused. 20 concurrent batches of one.
    const tenant = await createTenant(ds, { balance: 10 });
    const results = await Promise.all(Array.from({ length: 20 }, () => repo.reserve([reservation(tenant, 3)])));
    expect(results.flat().filter(Boolean)).toHaveLength(4);
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 10, reserved: 12 });
  });
});
