/**
 * What keeping the usage rollups costs the settlement under concurrency (issue 35), on a database of
 * its own (dropped at the end): `--workers` loops (default 8, as many gateway connections) reserve and
 * settle one request at a time for ONE tenant, every row in the same hour and rollup key (the hottest
 * case), through UsageLedgerRepository's own statements, for `--seconds` (default 10) per variant:
 * - deltas:  as built: SETTLE appends a delta row (no lock on any rollup row);
 * - none:    the delta skipped (a BEFORE INSERT trigger answering NULL): the settlement without rollups;
 * - upsert:  the delta turned into an upsert of the hourly row in the settlement's transaction (the
 *            same trigger, upserting): what an "update the rollup row in place" design costs.
 * Both zero-rated requests (no balance lock: the rollup row would be the only one they share) and
 * billable ones (already serialised on the tenant's balance row). Variants interleaved over `--rounds`
 * (default 2). Ledger statements commit asynchronously, as the gateway's pool does. Prints settlements/s and settle p50/p99 in ms, medians over rounds.
 *
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/usage-rollup-contention.ts [--workers 8] [--seconds 10] [--rounds 2]
 */
import { randomUUID } from 'node:crypto';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase } from '@flagship/testing';
import { UsageLedgerRepository } from '@flagship/ledger';

const flag = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const WORKERS = flag('workers', 8);
const SECONDS = flag('seconds', 10);
const ROUNDS = flag('rounds', 2);

const VARIANTS = {
  deltas: undefined,
  none: `CREATE FUNCTION bench_rollup() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
  upsert: `CREATE FUNCTION bench_rollup() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
      INSERT INTO usage_rollups_hourly (tenant_id, hour, product_key, client_id, model, provider, endpoint, status, requests, input_tokens, output_tokens, cached_tokens, debit, errors)
      VALUES (NEW.tenant_id, NEW.hour, NEW.product_key, NEW.client_id, NEW.model, NEW.provider, NEW.endpoint, NEW.status, NEW.requests, NEW.input_tokens, NEW.output_tokens, NEW.cached_tokens, NEW.debit, NEW.errors)
      ON CONFLICT (tenant_id, hour, product_key, client_id, model, provider, endpoint, status) DO UPDATE
        SET requests = usage_rollups_hourly.requests + excluded.requests, input_tokens = usage_rollups_hourly.input_tokens + excluded.input_tokens,
            output_tokens = usage_rollups_hourly.output_tokens + excluded.output_tokens, cached_tokens = usage_rollups_hourly.cached_tokens + excluded.cached_tokens,
            debit = usage_rollups_hourly.debit + excluded.debit, errors = usage_rollups_hourly.errors + excluded.errors;
      RETURN NULL; END $$`,
} as const;

const percentile = (xs: number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};
const median = (xs: number[]): number => percentile(xs, 50);

async function main(): Promise<void> {
  const db = await createTestDatabase();
  // The gateway's pool: its ledger statements commit without waiting for the WAL flush (ai-gateway's app.module).
  const url = new URL(db.url);
  url.searchParams.set('options', '-c synchronous_commit=off');
  const ds = createDataSource({ url: url.toString(), poolSize: WORKERS + 1 });
  try {
    await ds.initialize();
    const tenant = randomUUID();
    await ds.query(`INSERT INTO tenants (id, name, primary_email, plan) VALUES ($1, 'bench', 'bench@example.test', 'free')`, [tenant]);
    await ds.query(`INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, 1000000000000)`, [tenant]);
    const ledger = new UsageLedgerRepository(ds);
    const results = new Map<string, { rate: number[]; p50: number[]; p99: number[] }>();
    const run = async (variant: keyof typeof VARIANTS, zeroRated: boolean) => {
      await ds.query('DROP TRIGGER IF EXISTS bench_rollup ON usage_rollup_deltas');
      await ds.query('DROP FUNCTION IF EXISTS bench_rollup()');
      const fn = VARIANTS[variant];
      if (fn) {
        await ds.query(fn);
        await ds.query('CREATE TRIGGER bench_rollup BEFORE INSERT ON usage_rollup_deltas FOR EACH ROW EXECUTE FUNCTION bench_rollup()');
      }
      const ms: number[] = [];
      const until = performance.now() + SECONDS * 1000;
      const worker = async () => {
        while (performance.now() < until) {
          const r = {
            id: randomUUID(), tenantId: tenant, clientId: 'ffc_bench', productKey: 'core', provider: 'inhouse', model: 'fake-chat-1', endpoint: 'chat.completions',
            stream: false, estimate: 100, zeroRatedReason: zeroRated ? 'internal_suite:bench' : null, requestId: `req-${randomUUID()}`, inputPer1k: 1000, outputPer1k: 2000, cachedInputPer1k: null,
          };
          await ledger.reserve([r]);
          const started = performance.now();
          await ledger.settle([{ id: r.id, tenantId: tenant, status: 'succeeded', inputTokens: 10, outputTokens: 5, cachedTokens: 0, debit: 50, provider: 'inhouse', latencyMs: 3, usageEstimated: false, errorCode: null }]);
          ms.push(performance.now() - started);
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, worker));
      const key = `${zeroRated ? 'zero-rated' : 'billable'} ${variant}`;
      const into = results.get(key) ?? { rate: [], p50: [], p99: [] };
      into.rate.push(ms.length / SECONDS);
      into.p50.push(percentile(ms, 50));
      into.p99.push(percentile(ms, 99));
      results.set(key, into);
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const zeroRated of [true, false]) for (const variant of Object.keys(VARIANTS) as Array<keyof typeof VARIANTS>) await run(variant, zeroRated);
    }
    console.log(`${WORKERS} workers, one tenant, one rollup key, ${SECONDS} s x ${ROUNDS} rounds (medians)`);
    for (const [key, r] of results) {
      console.log(`${key.padEnd(20)} ${median(r.rate).toFixed(0).padStart(6)} settlements/s  settle p50 ${median(r.p50).toFixed(2)} ms  p99 ${median(r.p99).toFixed(2)} ms`);
    }
  } finally {
    if (ds.isInitialized) await ds.destroy();
    await db.drop();
    console.log(`dropped ${db.name}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
