/**
 * The migration to a partitioned usage_ledger (UsageLedgerPartitions1763905000000) on a database
 * holding rows of every status, while two pools (two gateway replicas) reserve, stamp, settle and
 * release through the ledger's own statements: no row is lost or changed, the requests reserved
 * before the swap are settled after it, the balance moves by exactly the debits, nothing stays held,
 * and no ledger call waits for more than the swap's lock. Rows: LEDGER_MIGRATION_ROWS (default 20,000).
 */
import type { DataSource, MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, seededRandom, type TestDatabase } from '@flagship/testing';
import { aReservation, aSettlement, balanceOf, createTenant } from './testing/ledger.fixture';
import type { Reservation } from './usage-ledger';
import { UsageLedgerRepository } from './usage-ledger.repository';

jest.setTimeout(120_000);

const Partitions = MIGRATIONS.find((m) => m.name === 'UsageLedgerPartitions1763905000000')! as new () => MigrationInterface;
const ROWS = Number(process.env['LEDGER_MIGRATION_ROWS'] ?? 20_000);

let db: TestDatabase;
let admin: DataSource;
let replicas: DataSource[];

beforeAll(async () => {
  db = await createTestDatabase();
  admin = createDataSource({ url: db.url, poolSize: 2, queryTimeoutMs: 0 });
  replicas = [createDataSource({ url: db.url, poolSize: 4 }), createDataSource({ url: db.url, poolSize: 4 })];
  for (const ds of [admin, ...replicas]) await ds.initialize();
});

afterAll(async () => {
  for (const ds of [...(replicas ?? []), admin]) await ds?.destroy();
  await db?.drop();
});

const relkind = async (): Promise<string> => (await admin.query(`SELECT relkind FROM pg_class WHERE oid = 'usage_ledger'::regclass`))[0].relkind;

/** Every column of a tenant's rows, as one digest (a row lost, added or changed changes it). */
const digest = async (tenant: string): Promise<{ n: number; md5: string }> =>
  (await admin.query(`SELECT count(*)::int AS n, md5(COALESCE(string_agg(u::text, '|' ORDER BY u.id), '')) AS md5 FROM usage_ledger u WHERE tenant_id = $1`, [tenant]))[0];

describe('usage_ledger to monthly partitions (real Postgres, writes going on)', () => {
  it('loses and changes no row of any status, settles across the swap, moves balances exactly', async () => {
    // The table as it was before the migration (the template database has it applied).
    const runner = admin.createQueryRunner();
    await new Partitions().down(runner);
    expect(await relkind()).toBe('r');

    // History: a tenant with rows of every status, a year back (pending, succeeded metered and not,
    // failed, abandoned charged and not, zero-rated), written as the table holds them.
    const history = await createTenant(admin, { balance: 0 });
    await admin.query(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, reserved, debit, zero_rated, zero_rated_reason,
                                 input_tokens, output_tokens, created_at, completed_at, meter_reported_at, upstream_called_at, error_code)
       SELECT $1, 'ffc_history', 'core', 'inhouse', 'fake-chat-1', 'chat.completions', s.status, 100, s.debit, s.zero, CASE WHEN s.zero THEN 'tenant_zero_rated' END,
              g % 50, g % 70, at, CASE WHEN s.status = 'pending' THEN NULL ELSE at + interval '2 seconds' END,
              CASE WHEN s.metered THEN at + interval '1 minute' END, CASE WHEN s.status = 'abandoned' AND s.debit > 0 THEN at END,
              CASE WHEN s.status = 'failed' THEN 'upstream_error' WHEN s.status = 'abandoned' THEN 'abandoned' END
         FROM generate_series(1, $2::int) g
         CROSS JOIN LATERAL (SELECT now() - make_interval(secs => ((g::bigint * 3155) % 31536000)::float8) AS at) t
         CROSS JOIN LATERAL (SELECT (ARRAY['pending','succeeded','succeeded','failed','abandoned','abandoned','succeeded'])[1 + g % 7] AS status,
                                    (ARRAY[0,70,55,0,100,0,0])[1 + g % 7]::bigint AS debit,
                                    g % 7 = 6 AS zero,
                                    g % 7 = 1 AS metered) s`,
      [history, ROWS],
    );
    const statuses: Array<{ status: string; n: number }> = await admin.query(
      `SELECT status || CASE WHEN zero_rated THEN '/zero-rated' WHEN debit > 0 AND meter_reported_at IS NULL AND status <> 'pending' THEN '/unmetered' WHEN meter_reported_at IS NOT NULL THEN '/metered' ELSE '' END AS status, count(*)::int AS n
         FROM usage_ledger WHERE tenant_id = $1 GROUP BY 1 ORDER BY 1`,
      [history],
    );
    expect(statuses.map((s) => s.status)).toEqual(['abandoned', 'abandoned/unmetered', 'failed', 'pending', 'succeeded/metered', 'succeeded/unmetered', 'succeeded/zero-rated']);
    const before = await digest(history);

    // Live traffic: requests reserved before the migration, settled while it runs.
    const tenant = await createTenant(admin, { balance: 1_000_000_000 });
    const ledgers = replicas.map((ds) => new UsageLedgerRepository(ds));
    const early: Reservation[] = Array.from({ length: 40 }, () => aReservation(tenant, 50));
    expect(await ledgers[0]!.reserve(early)).toEqual(early.map(() => true));

    const rnd = seededRandom(35);
    let migrating = true;
    let worst = 0;
    let settledAfter = 0;
    let settledRows = 0;
    const debits: number[] = [];
    const timed = async <T>(work: () => Promise<T>): Promise<T> => {
      const t0 = performance.now();
      try {
        return await work();
      } finally {
        worst = Math.max(worst, performance.now() - t0);
      }
    };
    const traffic = async (ledger: UsageLedgerRepository): Promise<number> => {
      let requests = 0;
      while (migrating) {
        const r = aReservation(tenant, 40, { zeroRatedReason: rnd() < 0.1 ? 'tenant_zero_rated' : null });
        const [admitted] = await timed(() => ledger.reserve([r]));
        expect(admitted).toBe(true);
        await timed(() => ledger.markUpstreamCalled([r]));
        if (rnd() < 0.2) {
          expect(await timed(() => ledger.release([r]))).toEqual([true]);
        } else {
          const debit = Math.floor(rnd() * 60);
          expect(await timed(() => ledger.settle([aSettlement(r, debit)]))).toEqual([true]);
          settledRows++;
          if (r.zeroRatedReason === null) debits.push(debit);
        }
        // Requests reserved in the old table: half settled while it is still the live one, half once it is a partition.
        const partitioned = (await relkind()) === 'p';
        const e = partitioned ? early.pop() : requests % 3 === 0 && early.length > 20 ? early.shift() : undefined;
        if (e) {
          expect(await timed(() => ledger.settle([aSettlement(e, 30)]))).toEqual([true]);
          debits.push(30);
          settledRows++;
          if (partitioned) settledAfter++;
        }
        requests++;
      }
      return requests;
    };
    const running = ledgers.map((l) => traffic(l));
    await new Promise((r) => setTimeout(r, 300));
    // The windows in which the migration holds an ACCESS EXCLUSIVE lock on a relation, seen every few ms.
    const [{ pid }] = await runner.query('SELECT pg_backend_pid() AS pid');
    const windows: string[] = [];
    let watching = true;
    const watch = (async () => {
      let since: { at: number; what: string } | null = null;
      while (watching) {
        const [{ held }] = await admin.query(
          `SELECT string_agg(DISTINCT relation::regclass::text, ' ') AS held FROM pg_locks WHERE pid = $1 AND locktype = 'relation' AND mode = 'AccessExclusiveLock' AND granted`,
          [pid],
        );
        const now = performance.now();
        if (held && since === null) since = { at: now, what: held };
        if (!held && since !== null) {
          windows.push(`${(now - since.at).toFixed(0)} (${since.what.split(' ')[0]})`);
          since = null;
        }
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const t0 = performance.now();
    await new Partitions().up(runner);
    const migrationMs = performance.now() - t0;
    watching = false;
    await watch;
    await new Promise((r) => setTimeout(r, 300));
    migrating = false;
    const requests = (await Promise.all(running)).reduce((a, b) => a + b, 0);
    await runner.release();
    for (const e of early.splice(0)) {
      expect(await ledgers[0]!.settle([aSettlement(e, 30)])).toEqual([true]);
      debits.push(30);
      settledRows++;
      settledAfter++;
    }

    expect(await relkind()).toBe('p');
    expect(await digest(history)).toEqual(before);
    const live: Array<{ status: string; n: number; debit: string }> = await admin.query(
      `SELECT status, count(*)::int AS n, sum(debit)::text AS debit FROM usage_ledger WHERE tenant_id = $1 GROUP BY status`,
      [tenant],
    );
    expect(live.map((s) => s.status)).toEqual(['succeeded']);
    expect(live[0]!.n).toBe(settledRows);
    expect(Number(live[0]!.debit)).toBe(debits.reduce((a, b) => a + b, 0));
    expect(await balanceOf(admin, tenant)).toEqual({ balance: 1_000_000_000 - debits.reduce((a, b) => a + b, 0), reserved: 0 });
    // Some of the requests reserved in the old table were settled in the new one, through the same statements.
    expect(settledAfter).toBeGreaterThanOrEqual(20);
    console.log(
      `migration of ${ROWS} rows: ${migrationMs.toFixed(0)} ms, ACCESS EXCLUSIVE windows (ms, first relation) ${windows.join(', ')}, ${requests} requests meanwhile, slowest ledger call ${worst.toFixed(0)} ms`,
    );
    expect(worst).toBeLessThan(2000);
  });
});
