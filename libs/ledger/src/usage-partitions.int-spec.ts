/**
 * usage_ledger's partition maintenance on real Postgres: months created ahead by two workers at once
 * (each month once, no error), rows that went to the DEFAULT partition moved into their month, and
 * retention that never drops or deletes a row still pending or not yet reported to Stripe's meter.
 */
import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';
import { createTenant } from './testing/ledger.fixture';
import { monthPartitionName, UsagePartitionsRepository } from './usage-partitions.repository';

jest.setTimeout(60_000);

let db: TestDatabase;
let workers: DataSource[];

beforeAll(async () => {
  db = await createTestDatabase();
  workers = [createDataSource({ url: db.url, poolSize: 2 }), createDataSource({ url: db.url, poolSize: 2 })];
  for (const ds of workers) await ds.initialize();
});

afterAll(async () => {
  for (const ds of workers ?? []) await ds.destroy();
  await db?.drop();
});

const ds = (): DataSource => workers[0]!;

/** The UTC month `offset` months from the running one, as `YYYY-MM-01`. */
async function month(offset: number): Promise<string> {
  const [row] = await ds().query(`SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => $1::int), 'YYYY-MM-DD') AS m`, [offset]);
  return row.m;
}

type Kind = 'pending' | 'unmetered' | 'abandoned-unmetered' | 'metered' | 'failed' | 'zero-rated' | 'released-at-zero';

/** A row of `kind` created at `at` (SQL text of a timestamptz). */
async function row(tenant: string, kind: Kind, at: string): Promise<string> {
  const v = {
    pending: ['pending', 0, false, false],
    unmetered: ['succeeded', 40, false, false],
    'abandoned-unmetered': ['abandoned', 40, false, false],
    metered: ['succeeded', 40, false, true],
    failed: ['failed', 0, false, false],
    'zero-rated': ['succeeded', 0, true, false],
    'released-at-zero': ['abandoned', 0, false, false],
  }[kind];
  const [r] = await ds().query(
    `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, zero_rated, created_at, completed_at, meter_reported_at)
     VALUES ($1, 'c', 'core', 'inhouse', 'fake-chat-1', 'chat.completions', $2, $3, $4, ${at}, CASE WHEN $2 <> 'pending' THEN ${at} END, CASE WHEN $5 THEN ${at} END)
     RETURNING id`,
    [tenant, ...v],
  );
  return r.id;
}

const ids = async (tenant: string): Promise<string[]> =>
  (await ds().query(`SELECT id FROM usage_ledger WHERE tenant_id = $1 ORDER BY id`, [tenant])).map((r: { id: string }) => r.id).sort();

describe('usage_ledger partitions (real Postgres)', () => {
  it('two workers creating the months ahead at once create each month once, both without error, idempotent after', async () => {
    const [a, b] = workers.map((w) => new UsagePartitionsRepository(w));
    const [madeA, madeB] = await Promise.all([a!.ensureAhead(8), b!.ensureAhead(8)]);
    const made = [...madeA, ...madeB].sort();
    expect(new Set(made).size).toBe(made.length);
    const names = (await a!.list()).filter((p) => !p.isDefault);
    // Contiguous: each partition starts where the one before ends, through the 8th month ahead.
    for (let i = 1; i < names.length; i++) expect(names[i]!.from).toEqual(names[i - 1]!.to);
    expect(names.at(-1)!.to!.toISOString().slice(0, 10)).toBe(await month(9));
    expect(made).toContain(monthPartitionName(await month(8)));
    expect(await Promise.all([a!.ensureAhead(8), b!.ensureAhead(8)])).toEqual([[], []]);
  });

  it('moves the rows that went to the DEFAULT partition into their month when it is created, losing none', async () => {
    const repo = new UsagePartitionsRepository(ds());
    const tenant = await createTenant(ds());
    const far = `(date_trunc('month', now()) + interval '14 months' + interval '3 days')`;
    const stray = [await row(tenant, 'pending', far), await row(tenant, 'unmetered', far), await row(tenant, 'metered', far)];
    expect(await repo.defaultRows()).toBe(3);
    const made = await repo.ensureAhead(14);
    expect(made.length).toBeGreaterThan(0);
    expect(await repo.defaultRows()).toBe(0);
    expect(await ids(tenant)).toEqual([...stray].sort());
    const where: Array<{ p: string }> = await ds().query(`SELECT DISTINCT tableoid::regclass::text AS p FROM usage_ledger WHERE tenant_id = $1`, [tenant]);
    expect(where.map((w) => w.p)).toEqual([made.at(-1)]);
  });

  it('drops whole months past the cutoff, never one holding a pending row or a billable row not yet metered', async () => {
    const repo = new UsagePartitionsRepository(ds());
    // Past months of their own, as a year after the migration: the partition of the past detached, months -6 to now made.
    const [past] = (await repo.list()).filter((p) => p.from === null && !p.isDefault);
    await ds().query(`ALTER TABLE usage_ledger DETACH PARTITION ${past!.name}`);
    await repo.ensureMonths(-6, 0);
    const tenant = await createTenant(ds());
    const inMonth = (m: number) => `(date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => ${m}) + interval '5 days') AT TIME ZONE 'UTC'`;
    // Month -5: only rows retention may remove. -4: a charged abandoned row not metered. -3: a pending row. -2: an unmetered succeeded row.
    for (const k of ['metered', 'failed', 'zero-rated', 'released-at-zero'] as const) await row(tenant, k, inMonth(-5));
    const held = [
      await row(tenant, 'abandoned-unmetered', inMonth(-4)),
      await row(tenant, 'metered', inMonth(-4)),
      await row(tenant, 'pending', inMonth(-3)),
      await row(tenant, 'unmetered', inMonth(-2)),
    ];
    const recent = await row(tenant, 'metered', inMonth(-1));
    const name = async (m: number) => monthPartitionName(await month(m));
    const cutoff = await repo.cutoff(1);
    expect(cutoff.toISOString().slice(0, 10)).toBe(await month(-1));

    const first = await repo.dropBefore(cutoff);
    expect(first).toEqual({ dropped: [await name(-6), await name(-5)], held: [await name(-4), await name(-3), await name(-2)] });
    expect(await ids(tenant)).toEqual([...held, recent].sort());

    // Once metered, and settled, their months go too; the month after the cutoff stays.
    await ds().query(`UPDATE usage_ledger SET meter_reported_at = now() WHERE tenant_id = $1 AND status IN ('succeeded', 'abandoned')`, [tenant]);
    expect(await repo.dropBefore(cutoff)).toEqual({ dropped: [await name(-4), await name(-2)], held: [await name(-3)] });
    await ds().query(`UPDATE usage_ledger SET status = 'failed', completed_at = now() WHERE tenant_id = $1 AND status = 'pending'`, [tenant]);
    expect(await repo.dropBefore(cutoff)).toEqual({ dropped: [await name(-3)], held: [] });
    expect(await ids(tenant)).toEqual([recent]);
    expect((await repo.list()).map((p) => p.name)).toEqual(expect.arrayContaining([await name(-1), await name(0)]));
  });

  it("deletes a shorter plan's rows before its cutoff, never a pending or unmetered one, and no other plan's", async () => {
    const repo = new UsagePartitionsRepository(ds());
    const free = await createTenant(ds());
    const premium = await createTenant(ds());
    await ds().query(`UPDATE tenants SET plan = 'premium' WHERE id = $1`, [premium]);
    const old = `now() - interval '400 days'`;
    const kinds: Kind[] = ['pending', 'unmetered', 'abandoned-unmetered', 'metered', 'failed', 'zero-rated', 'released-at-zero'];
    const freeRows = new Map<Kind, string>();
    for (const k of kinds) freeRows.set(k, await row(free, k, old));
    const recent = await row(free, 'metered', 'now()');
    const premiumRows = await Promise.all(kinds.map((k) => row(premium, k, old)));
    const cutoff = await repo.cutoff(3);
    // Two a batch: the loop as the job runs it, until a batch comes back short.
    let deleted = 0;
    for (let n = 2; n === 2; deleted += n) n = await repo.deleteBefore('free', cutoff, 2);
    expect(deleted).toBe(4);
    expect(await ids(free)).toEqual([freeRows.get('pending')!, freeRows.get('unmetered')!, freeRows.get('abandoned-unmetered')!, recent].sort());
    expect(await ids(premium)).toEqual([...premiumRows].sort());
  });
});
