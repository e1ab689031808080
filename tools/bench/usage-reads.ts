/**
 * The usage reads of a year of one busy tenant (issue 35), from the ledger's rows (before) and from
 * the usage rollups (after), on a database of its own that the bench drops at the end.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/usage-reads.ts [--rows 10000000] [--runs 50] [--keep] [--reuse <database> --only after]
 *
 * `--keep` leaves the filled database (its name is printed) and `--reuse` times the reads on it
 * again without the 25-minute fill of 10 million rows, so the reads can be timed on a quiet machine;
 * `--only after` skips the "before" timings (the rows' aggregate takes seconds a run).
 *
 * Fills `--rows` completed usage rows (generate_series in SQL, indexes built after the fill) for one
 * tenant over the last 365 days (20 clients, 2 product keys, 4 models on 2 providers, 2 endpoints;
 * 95% succeeded, 4% failed, 1% abandoned) plus a neighbour with a tenth as many, builds the rollups
 * with the migration's own backfill (1763900000000's up, its tables dropped first; then 1763900000001's
 * listing indexes), and times each read `--runs`
 * times (after one warm-up), through UsageRepository, the SQL GET /api/usage and /summary run:
 * - summary of the last 30 days, of the year, of the year and one model: the rows' aggregate
 *   (groupsOfRows, what /summary ran before) against the rollups (groups), and checks they answer the same;
 * - the listing's first page (50 rows) filtered by model and status over the year, and unfiltered:
 *   with the listing's indexes, then without them (dropped for the "before" runs), with the plan.
 * Prints p50 and p99 in ms and before/after ratios.
 */
import type { DataSource } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, urlFor } from '@flagship/testing';
import { type UsageFilter, UsageRepository } from '@flagship/ledger';

const flag = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const text = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const REUSE = text('reuse');
const KEEP = REUSE !== undefined || process.argv.includes('--keep');
const AFTER_ONLY = text('only') === 'after';
const ROWS = flag('rows', 10_000_000);
const RUNS = flag('runs', 50);
const BIG = '00000000-0000-4000-8000-000000000035';
const NEIGHBOUR = '00000000-0000-4000-8000-000000000036';
const DAY_MS = 86_400_000;
const LISTING_INDEXES = ['usage_ledger_tenant_model_status_idx', 'usage_ledger_tenant_status_idx'];

const percentile = (xs: number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

async function timed<T>(work: () => Promise<T>): Promise<{ p50: number; p99: number; last: T }> {
  let last = await work();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    last = await work();
    ms.push(performance.now() - started);
  }
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), last };
}

/** `n` completed rows of `tenant`, evenly over the 365 days before `end`, in chunks of a million. */
async function fill(ds: DataSource, tenant: string, n: number, end: Date): Promise<void> {
  const chunk = 1_000_000;
  for (let start = 0; start < n; start += chunk) {
    const upto = Math.min(n, start + chunk);
    await ds.query(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, reserved, debit, input_tokens, output_tokens,
                                 cached_tokens, error_code, latency_ms, created_at, completed_at, meter_reported_at)
       SELECT $1::uuid, 'ffc_client' || (i % 20), CASE WHEN i % 3 = 0 THEN 'search' ELSE 'core' END,
              CASE WHEN m < 2 THEN 'inhouse' ELSE 'hosted' END, 'model-' || m, CASE WHEN m = 3 THEN 'embeddings' ELSE 'chat.completions' END,
              s, 900, CASE WHEN s = 'failed' THEN 0 ELSE 100 + i % 700 END, 200 + i % 300, CASE WHEN s = 'failed' THEN 0 ELSE 50 + i % 200 END,
              i % 7, CASE WHEN s = 'failed' THEN 'provider_error' END, 20 + i % 50, at, at + interval '1 second', at + interval '5 seconds'
         FROM (SELECT i, (i * 7 + i / 13) % 4 AS m,
                      CASE WHEN i % 100 < 95 THEN 'succeeded' WHEN i % 100 < 99 THEN 'failed' ELSE 'abandoned' END AS s,
                      $4::timestamptz - interval '365 days' + (i::double precision / $3) * interval '365 days' AS at
                 FROM generate_series($2::bigint, $5::bigint - 1) AS i) g`,
      [tenant, start, n, end, upto],
    );
    process.stdout.write(`  ${tenant === BIG ? 'tenant' : 'neighbour'}: ${upto.toLocaleString('en')} rows\r`);
  }
  process.stdout.write('\n');
}

async function main(): Promise<void> {
  if (REUSE !== undefined && !/^flagship_test_[0-9a-f]+$/.test(REUSE)) throw new Error(`--reuse takes a database this bench kept, not ${REUSE}`);
  const db = REUSE !== undefined ? { name: REUSE, url: urlFor(REUSE), drop: async () => undefined } : await createTestDatabase();
  const ds = createDataSource({ url: db.url, poolSize: 2, queryTimeoutMs: 0 });
  const stop = () => {
    void (KEEP ? Promise.resolve() : db.drop()).finally(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  try {
    await ds.initialize();
    const end = REUSE !== undefined ? await filledUntil(ds) : new Date();
    if (REUSE === undefined) await fillAndRollUp(ds, db.name, end);
    await timeReads(ds, end);
  } finally {
    if (ds.isInitialized) await ds.destroy();
    if (KEEP) console.log(`kept ${db.name}: rerun with --reuse ${db.name} --only after; drop it with: psql -U postgres -h 127.0.0.1 -c 'DROP DATABASE ${db.name}'`);
    else {
      await db.drop();
      console.log(`dropped ${db.name}`);
    }
  }
}

/** The `end` a kept database was filled up to: its rows span the 365 days before it. */
async function filledUntil(ds: DataSource): Promise<Date> {
  const [row] = await ds.query(`SELECT max(created_at) + interval '1 millisecond' AS end FROM usage_ledger WHERE tenant_id = $1`, [BIG]);
  if (!row?.end) throw new Error('the database holds no rows of the bench tenant');
  return new Date(row.end);
}

async function fillAndRollUp(ds: DataSource, name: string, end: Date): Promise<void> {
  for (const id of [BIG, NEIGHBOUR]) await ds.query(`INSERT INTO tenants (id, name, primary_email, plan) VALUES ($1::uuid, $2, $2 || '@example.test', 'free')`, [id, `bench-${id.slice(-2)}`]);
  // The fill is faster with the secondary indexes built after it, as a bulk load is done.
  const indexes: Array<{ indexname: string; indexdef: string }> = await ds.query(
    `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'usage_ledger' AND indexname <> 'usage_ledger_pkey'`,
  );
  for (const i of indexes) await ds.query(`DROP INDEX ${i.indexname}`);
  let started = performance.now();
  console.log(`filling ${ROWS.toLocaleString('en')} rows for one tenant and ${Math.round(ROWS / 10).toLocaleString('en')} for a neighbour (database ${name})`);
  await fill(ds, BIG, ROWS, end);
  await fill(ds, NEIGHBOUR, Math.round(ROWS / 10), end);
  console.log(`filled in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  started = performance.now();
  // pg_indexes gives a partitioned table's index as `ON ONLY usage_ledger` (the parent alone, left
  // invalid until each partition has its own); built here on the table and every partition at once.
  const build = (i: { indexdef: string }) => ds.query(i.indexdef.replace(' ON ONLY ', ' ON '));
  const listingLater = (x: { indexname: string }) => x.indexname.startsWith('usage_ledger_tenant_') && x.indexname !== 'usage_ledger_tenant_idx';
  for (const i of indexes.filter((x) => !listingLater(x))) await build(i);
  console.log(`ledger indexes built in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  // The rollups as the migration builds them, then the listing's indexes as theirs does (left out above).
  await ds.query('DROP TABLE usage_rollup_deltas, usage_rollups_hourly, usage_rollups_daily');
  const migration = (name: string) => new (MIGRATIONS.find((m) => m.name === name)!)();
  const q = ds.createQueryRunner();
  let backfillS = 0;
  started = performance.now();
  try {
    await q.startTransaction();
    await migration('UsageRollups1763900000000').up(q);
    await q.commitTransaction();
    backfillS = (performance.now() - started) / 1000;
    started = performance.now();
    // The listing's indexes as they were before the fill (UsageLedgerListingIndexes1763900000001 builds
    // them CONCURRENTLY, which a partitioned table refuses; the partitioning carried them over).
    for (const i of indexes.filter(listingLater)) await build(i);
  } finally {
    await q.release();
  }
  const indexesS = (performance.now() - started) / 1000;
  await ds.query('VACUUM ANALYZE usage_ledger');
  await ds.query('VACUUM ANALYZE usage_rollups_hourly');
  await ds.query('VACUUM ANALYZE usage_rollups_daily');
  const [sizes] = await ds.query(
    `SELECT (SELECT count(*) FROM usage_rollups_hourly)::int AS hourly, (SELECT count(*) FROM usage_rollups_daily)::int AS daily,
            pg_size_pretty((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('usage_ledger'))) AS ledger, pg_size_pretty(pg_total_relation_size('usage_rollups_hourly')) AS hourly_size,
            pg_size_pretty(pg_total_relation_size('usage_rollups_daily')) AS daily_size`,
  );
  console.log(
    `rollup backfill (migration 1763900000000) in ${backfillS.toFixed(1)} s, listing indexes (as before the fill, on every partition) in ${indexesS.toFixed(1)} s: ${sizes.hourly.toLocaleString('en')} hourly rows (${sizes.hourly_size}), ${sizes.daily.toLocaleString('en')} daily rows (${sizes.daily_size}); ledger ${sizes.ledger}`,
  );
}

async function timeReads(ds: DataSource, end: Date): Promise<void> {

  const repo = new UsageRepository(ds);
  const ago = (days: number) => new Date(end.getTime() - days * DAY_MS);
  const summaries: Array<[string, UsageFilter]> = [
    ['summary, last 30 days', { from: ago(30) }],
    ['summary, the year', { from: ago(365) }],
    ['summary, the year, one model', { from: ago(365), model: 'model-2' }],
  ];
  const lines: string[] = [];
  const line = (label: string, before: { p50: number; p99: number } | undefined, after: { p50: number; p99: number }) => {
    const afterText = `after p50 ${after.p50.toFixed(2).padStart(7)} p99 ${after.p99.toFixed(2).padStart(7)} ms`;
    lines.push(
      before === undefined
        ? `${label.padEnd(48)} ${afterText}`
        : `${label.padEnd(48)} before p50 ${before.p50.toFixed(1).padStart(8)} p99 ${before.p99.toFixed(1).padStart(8)} ms | ${afterText} | p99 ${(before.p99 / after.p99).toFixed(0)}x`,
    );
  };
  for (const [label, filter] of summaries) {
    const after = await timed(() => repo.groups(BIG, filter));
    if (AFTER_ONLY) {
      line(label, undefined, after);
      continue;
    }
    const before = await timed(() => repo.groupsOfRows(BIG, filter));
    if (JSON.stringify(after.last) !== JSON.stringify(before.last)) throw new Error(`${label}: the rollups answer ${JSON.stringify(after.last)}, the rows ${JSON.stringify(before.last)}`);
    line(label, before, after);
  }

  const listings: Array<[string, UsageFilter]> = [
    ['list, the year, model + status failed', { from: ago(365), model: 'model-1', status: 'failed' }],
    ['list, the year, model + status abandoned', { from: ago(365), model: 'model-3', status: 'abandoned' }],
    // No row matches: without an index on both, the whole year of the tenant is read to say so.
    ['list, the year, model + status pending (none)', { from: ago(365), model: 'model-1', status: 'pending' }],
    ['list, the year, status abandoned', { from: ago(365), status: 'abandoned' }],
    ['list, first page', {}],
  ];
  const explain = async (filter: UsageFilter) => {
    const plan: Array<{ 'QUERY PLAN': string }> = await ds.query(
      `EXPLAIN (ANALYZE, COSTS OFF) SELECT id FROM usage_ledger WHERE tenant_id = $1 AND created_at >= $2 ${filter.model ? `AND model = '${filter.model}'` : ''} ${filter.status ? `AND status = '${filter.status}'` : ''}
        ORDER BY created_at DESC, id DESC LIMIT 51`,
      [BIG, filter.from ?? ago(366)],
    );
    return plan.map((r) => `    ${r['QUERY PLAN']}`).join('\n');
  };
  const afterListing = new Map<string, { p50: number; p99: number }>();
  const plans: string[] = [];
  for (const [label, filter] of listings) {
    afterListing.set(label, await timed(() => repo.list(BIG, filter, 50)));
    plans.push(`  ${label}, with the listing's indexes:\n${await explain(filter)}`);
  }
  if (AFTER_ONLY) for (const [label] of listings) line(label, undefined, afterListing.get(label)!);
  else {
    const kept: Array<{ indexdef: string }> = await ds.query(`SELECT indexdef FROM pg_indexes WHERE tablename = 'usage_ledger' AND indexname = ANY($1)`, [LISTING_INDEXES]);
    for (const name of LISTING_INDEXES) await ds.query(`DROP INDEX ${name}`);
    for (const [label, filter] of listings) {
      line(label, await timed(() => repo.list(BIG, filter, 50)), afterListing.get(label)!);
      plans.push(`  ${label}, without them:\n${await explain(filter)}`);
    }
    // A kept database is reused with its listing indexes, as the product has them.
    if (KEEP) for (const i of kept) await ds.query(i.indexdef.replace(' ON ONLY ', ' ON '));
  }
  const [{ rows }] = await ds.query(`SELECT count(*)::bigint AS rows FROM usage_ledger WHERE tenant_id = $1`, [BIG]);
  console.log(`\n${Number(rows).toLocaleString('en')} rows, ${RUNS} runs each (${AFTER_ONLY ? '' : "before: rows' aggregate / no listing index; "}after: rollups / listing indexes)`);
  for (const l of lines) console.log(l);
  console.log('\nplans (EXPLAIN ANALYZE of the listing query):');
  for (const p of plans) console.log(p);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
