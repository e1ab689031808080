import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';
import { aReservation, aSettlement, balanceOf, createTenant, insertBudget, ledgerRows } from './testing/ledger.fixture';
import { RELEASE, SETTLE } from './statements/settle.sql';
import type { Reservation } from './usage-ledger';
import { UsageLedgerRepository } from './usage-ledger.repository';

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

/**
 * A batch of one reserves through its own short statement (RESERVE_ONE), larger batches through the
 * batch statement: both must admit, hold and write exactly alike, whatever mix of billable and
 * zero-rated requests, tenants with and without credit, arrives.
 */
describe('UsageLedgerRepository.reserve (real Postgres)', () => {

  /** Each reservation alone (batches of one), or all together (one batch). */
  const shapes: Array<[string, (rs: Reservation[]) => Promise<boolean[]>]> = [
    ['one at a time', async (rs) => {
      const out: boolean[] = [];
      for (const r of rs) out.push(...(await repo.reserve([r])));
      return out;
    }],
    ['in one batch', (rs) => repo.reserve(rs)],
  ];

  it.each(shapes)('%s: admits while the credit left covers the whole estimate, holds each estimate, and writes one pending row per admission', async (_shape, reserve) => {
    // 250 available: the first two (100 each) fit; the 50 left do not cover a third (nor a fourth).
    const tenant = await createTenant(ds, { balance: 250 });
    const rs = [aReservation(tenant, 100), aReservation(tenant, 100), aReservation(tenant, 100), aReservation(tenant, 100)];
    expect(await reserve(rs)).toEqual([true, true, false, false]);
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 250, reserved: 200 });
    const rows = await ledgerRows(ds, tenant);
    expect(rows.map((r) => r.id).sort()).toEqual(rs.slice(0, 2).map((r) => r.id).sort());
    for (const row of rows) {
      expect(row).toMatchObject({ status: 'pending', reserved: '100', zero_rated: false, zero_rated_reason: null, provider: 'inhouse', requested_provider: 'inhouse', client_id: 'ffc_ledgerSpec' });
    }
    expect(rows.map((r) => r.request_id).sort()).toEqual(rs.slice(0, 2).map((r) => r.requestId).sort());
  });

  it.each(shapes)('%s: a balance of 1 admits no request estimated above it, and a billable estimate of 0 still needs 1 left', async (_shape, reserve) => {
    const one = await createTenant(ds, { balance: 1 });
    const empty = await createTenant(ds, { balance: 0 });
    expect(await reserve([aReservation(one, 60_000), aReservation(empty, 0), aReservation(one, 2)])).toEqual([false, false, false]);
    expect(await balanceOf(ds, one)).toEqual({ balance: 1, reserved: 0 });
    expect(await ledgerRows(ds, one)).toEqual([]);
  });

  it.each(shapes)('%s: a zero-rated request is always admitted and holds nothing; a tenant with no balance row is refused', async (_shape, reserve) => {
    const broke = await createTenant(ds, { balance: 0 });
    const noRow = await createTenant(ds);
    const rs = [aReservation(broke, 100, { zeroRatedReason: 'internal_suite:suite_a' }), aReservation(broke, 100), aReservation(noRow, 1)];
    expect(await reserve(rs)).toEqual([true, false, false]);
    expect(await balanceOf(ds, broke)).toEqual({ balance: 0, reserved: 0 });
    const [row, ...others] = await ledgerRows(ds, broke);
    expect(others).toEqual([]);
    expect(row).toMatchObject({ id: rs[0]!.id, status: 'pending', reserved: '0', zero_rated: true, zero_rated_reason: 'internal_suite:suite_a' });
    expect(await ledgerRows(ds, noRow)).toEqual([]);
  });

  it.each(shapes)('%s: records on each row the prices it was admitted at, billable or zero-rated, with or without a cached price', async (_shape, reserve) => {
    const tenant = await createTenant(ds, { balance: 1000 });
    const rs = [
      { ...aReservation(tenant, 10), inputPer1k: 150, outputPer1k: 600, cachedInputPer1k: 75 },
      { ...aReservation(tenant, 10), inputPer1k: 2500, outputPer1k: 10_000, cachedInputPer1k: null },
      { ...aReservation(tenant, 10, { zeroRatedReason: 'internal_suite:suite_a' }), inputPer1k: 20, outputPer1k: 0, cachedInputPer1k: 5 },
    ];
    expect(await reserve(rs)).toEqual([true, true, true]);
    const rows = new Map((await ledgerRows(ds, tenant)).map((r) => [r.id, r]));
    for (const r of rs) {
      expect(rows.get(r.id)).toMatchObject({
        input_per_1k: String(r.inputPer1k),
        output_per_1k: String(r.outputPer1k),
        cached_input_per_1k: r.cachedInputPer1k === null ? null : String(r.cachedInputPer1k),
        cached_tokens: 0,
      });
    }
  });

  it.each(shapes)("%s: records the caller's own request id on its row, billable, zero-rated or under a budget; none sent is null", async (_shape, reserve) => {
    const tenant = await createTenant(ds, { balance: 1000 });
    await insertBudget(ds, tenant, 'product', 'budgeted', 10_000);
    const rs = [
      aReservation(tenant, 10, { clientRequestId: 'backend-req:42' }),
      aReservation(tenant, 10, { zeroRatedReason: 'internal_suite:suite_a', clientRequestId: 'zr.1' }),
      aReservation(tenant, 10, { productKey: 'budgeted', clientRequestId: 'b_1' }),
      aReservation(tenant, 10),
    ];
    expect(await reserve(rs)).toEqual([true, true, true, true]);
    const rows = new Map((await ledgerRows(ds, tenant)).map((r) => [r.id, r.client_request_id]));
    expect(rs.map((r) => rows.get(r.id))).toEqual(['backend-req:42', 'zr.1', 'b_1', null]);
  });

  it('the database refuses a client request id a caller could abuse (too long, or outside A-Z a-z 0-9 . _ : -)', async () => {
    const tenant = await createTenant(ds, { balance: 1000 });
    for (const bad of ['x'.repeat(129), 'has space', "quote'", '']) {
      await expect(repo.reserve([aReservation(tenant, 10, { clientRequestId: bad })])).rejects.toThrow(/usage_ledger_client_request_id_check/);
    }
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 1000, reserved: 0 });
  });

  it('one-at-a-time reservations racing on one connection each never hold more than the credit left allows', async () => {
    // 10 available, estimate 3: admissions at 10, 7, 4 left; the 1 left covers none. 20 concurrent batches of one.
    const tenant = await createTenant(ds, { balance: 10 });
    const results = await Promise.all(Array.from({ length: 20 }, () => repo.reserve([aReservation(tenant, 3)])));
    expect(results.flat().filter(Boolean)).toHaveLength(3);
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 10, reserved: 9 });
  });
});

/**
 * Settling and releasing find their rows by primary key: reading them through
 * usage_ledger_pending_idx (every pending row, plus an entry for each row settled since the last
 * vacuum) made each settlement's cost grow with the traffic since the last vacuum.
 */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

describe('UsageLedgerRepository.settle and release (real Postgres)', () => {
  it('completes pending rows, debits their cost and releases their holds; a row the reconciler abandoned is left alone', async () => {
    const tenant = await createTenant(ds, { balance: 1000 });
    const [a, b, c] = [aReservation(tenant, 100), aReservation(tenant, 100), aReservation(tenant, 100)];
    expect(await repo.reserve([a, b, c])).toEqual([true, true, true]);
    // The reconciler's way out of pending: abandoned, completed, its hold released.
    await ds.query(`UPDATE usage_ledger SET status = 'abandoned', completed_at = now() WHERE id = $1`, [c.id]);
    await ds.query(`UPDATE credit_balances SET reserved = reserved - 100 WHERE tenant_id = $1`, [tenant]);

    // Named under another tenant, a row is neither settled nor released (every statement names the row's tenant).
    const other = await createTenant(ds, { balance: 1000 });
    expect(await repo.settle([{ ...aSettlement(a, 40), tenantId: other }])).toEqual([false]);
    expect(await repo.release([{ id: b.id, tenantId: other }])).toEqual([false]);
    expect(await balanceOf(ds, other)).toEqual({ balance: 1000, reserved: 0 });

    expect(await repo.settle([{ ...aSettlement(a, 40), cachedTokens: 3 }, aSettlement(c, 40)])).toEqual([true, false]);
    expect(await repo.release([{ id: b.id, tenantId: b.tenantId }])).toEqual([true]);

    expect(await balanceOf(ds, tenant)).toEqual({ balance: 960, reserved: 0 });
    const rows = await ledgerRows(ds, tenant);
    expect(rows.map((r) => [r.id, r.status, r.debit])).toEqual(
      expect.arrayContaining([[a.id, 'succeeded', '40'], [c.id, 'abandoned', '0']]),
    );
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.id === a.id)?.completed_at).not.toBeNull();
    // The cached input tokens the settlement reported, and the prices written at its reservation, kept.
    expect(rows.find((r) => r.id === a.id)).toMatchObject({ cached_tokens: 3, input_tokens: 7, input_per_1k: '1000', output_per_1k: '2000', cached_input_per_1k: null });
    // Settling or releasing again changes nothing.
    expect(await repo.settle([aSettlement(a, 40)])).toEqual([false]);
    expect(await repo.release([{ id: a.id, tenantId: tenant }])).toEqual([false]);
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 960, reserved: 0 });
  });

  it('marks a settlement above its reservation overrun and debits it all the same; at or under it, or zero-rated, is no overrun', async () => {
    const tenant = await createTenant(ds, { balance: 1000 });
    const [over, at, under, free] = [aReservation(tenant, 100), aReservation(tenant, 100), aReservation(tenant, 100), aReservation(tenant, 100, { zeroRatedReason: 'tenant_zero_rated' })];
    expect(await repo.reserve([over, at, under, free])).toEqual([true, true, true, true]);
    expect(await repo.settle([aSettlement(over, 130), aSettlement(at, 100), aSettlement(under, 40), aSettlement(free, 500)])).toEqual([true, true, true, true]);
    const rows = new Map((await ledgerRows(ds, tenant)).map((r) => [r.id, [r.debit, r.overrun]]));
    expect([over, at, under, free].map((r) => rows.get(r.id))).toEqual([['130', true], ['100', false], ['40', false], ['0', false]]);
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 1000 - 270, reserved: 0 });
  });

  it("refuses a row that is pending with a completed_at, or completed without one (SETTLE's 'still pending' relies on it)", async () => {
    const tenant = await createTenant(ds);
    const insert = (status: string, completedAt: string | null) =>
      ds.query(
        `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, completed_at)
         VALUES ($1, 'ffc_ledgerSpec', 'core', 'inhouse', 'fake-chat-1', 'chat.completions', $2, $3)`,
        [tenant, status, completedAt],
      );
    await expect(insert('succeeded', null)).rejects.toThrow(/usage_ledger_completed_iff_settled/);
    await expect(insert('pending', new Date().toISOString())).rejects.toThrow(/usage_ledger_completed_iff_settled/);
    await expect(insert('failed', new Date().toISOString())).resolves.toBeDefined();
  });

  it('plans each statement as a primary-key lookup per row, even with thousands of settled rows in the pending index', async () => {
    const tenant = await createTenant(ds, { balance: 1_000_000_000 });
    // 5,000 rows written pending and then settled (their pending-index entries stay until vacuum), as under traffic.
    // Storage parameters are each partition's own (usage_ledger is partitioned by month: migration 1763905000000).
    const partitions = (await ds.query<Array<{ name: string }>>(`SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = 'usage_ledger'::regclass`)).map((p) => p.name);
    for (const p of partitions) await ds.query(`ALTER TABLE ${p} SET (autovacuum_enabled = false)`);
    await ds.query(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint)
       SELECT $1, 'ffc_ledgerSpec', 'core', 'inhouse', 'fake-chat-1', 'chat.completions' FROM generate_series(1, 5000)`,
      [tenant],
    );
    await ds.query(`UPDATE usage_ledger SET status = 'succeeded', completed_at = now() WHERE tenant_id = $1`, [tenant]);
    await ds.query('ANALYZE usage_ledger');
    const pending = [aReservation(tenant, 10), aReservation(tenant, 10), aReservation(tenant, 10)];
    expect(await repo.reserve(pending)).toEqual([true, true, true]);

    // EXPLAIN of the very text the repository runs, with a batch's values, planned as the repository has it planned (unnamed):
    // how each plan reads usage_ledger's partitions, as "<node type> <index>" (a partition's primary key: `pkey`).
    // The partition holding the rows (this month's) is the one whose plan matters; the others are empty here.
    const [{ current }] = await ds.query<Array<{ current: string }>>(`SELECT tableoid::regclass::text AS current FROM usage_ledger WHERE tenant_id = $1 LIMIT 1`, [tenant]);
    const readsOfLedger = async (text: string, values: unknown[]): Promise<string[]> => {
      const [row] = await ds.query<Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>>(`EXPLAIN (FORMAT JSON) ${text}`, values);
      const reads: string[] = [];
      const walk = (n: PlanNode): void => {
        if (n['Relation Name'] === current && n['Node Type'] !== 'ModifyTable') reads.push(`${n['Node Type']} ${n['Index Name']?.endsWith('_pkey') ? 'pkey' : (n['Index Name'] ?? '')}`.trim());
        for (const child of n.Plans ?? []) walk(child);
      };
      walk(row!['QUERY PLAN'][0]!.Plan);
      return reads;
    };
    const settleValues = [
      pending.map((r) => r.id), pending.map((r) => r.tenantId), pending.map(() => 'succeeded'), pending.map(() => 1), pending.map(() => 1),
      pending.map(() => 5), pending.map(() => 'inhouse'), pending.map(() => 3), pending.map(() => false), pending.map(() => null),
      pending.map(() => 0),
    ];
    // The rows' months unknown (nulls): every partition is read, this month's by its key.
    expect(await readsOfLedger(SETTLE, [...settleValues, null, null, pending.map(() => null)])).toEqual(['Index Scan pkey']);
    expect(await readsOfLedger(RELEASE, [pending.map((r) => r.id), pending.map((r) => r.tenantId), null, null])).toEqual(['Index Scan pkey']);
    // Known, as the repository passes them (the reservations' created_at): only their partition is planned.
    const [{ lo, hi, n }] = await ds.query<Array<{ lo: Date; hi: Date; n: number }>>(
      `SELECT min(created_at) AS lo, max(created_at) AS hi, count(DISTINCT tableoid)::int AS n FROM usage_ledger WHERE id = ANY($1::uuid[])`,
      [pending.map((r) => r.id)],
    );
    expect(n).toBe(1);
    const planned = async (text: string, values: unknown[]): Promise<string[]> => {
      const [row] = await ds.query<Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>>(`EXPLAIN (FORMAT JSON) ${text}`, values);
      const names = new Set<string>();
      const walk = (node: PlanNode): void => {
        if (node['Relation Name']?.startsWith('usage_ledger') && node['Node Type'] !== 'ModifyTable') names.add(node['Relation Name']);
        for (const child of node.Plans ?? []) walk(child);
      };
      walk(row!['QUERY PLAN'][0]!.Plan);
      return [...names];
    };
    expect(await planned(SETTLE, [...settleValues, lo, hi, pending.map(() => null)])).toEqual([current]);
    expect(await planned(RELEASE, [pending.map((r) => r.id), pending.map((r) => r.tenantId), lo, hi])).toEqual([current]);
    expect(partitions.length).toBeGreaterThan(1);
    for (const p of partitions) await ds.query(`ALTER TABLE ${p} RESET (autovacuum_enabled)`);
  });
});
