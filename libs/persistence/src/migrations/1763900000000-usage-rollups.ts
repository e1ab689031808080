import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The dimensions an hourly rollup row is keyed by, after its tenant and hour (usage_ledger's own columns). */
const DIMENSIONS = 'product_key, client_id, model, provider, endpoint, status';
/** A daily row's: what GET /api/usage/summary filters and groups by, so a year is a few thousand rows. */
const DAILY_DIMENSIONS = 'product_key, model, status';
/** The sums a rollup row holds, as an aggregate over usage_ledger rows. */
const SUMS_OF_ROWS = `count(*), sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(debit), count(error_code)`;

/**
 * Usage reads from rollups (issue 35; docs/decisions/2026-11-29-usage-rollups.md). Three tables, all
 * over COMPLETED ledger rows only (a pending row is read from usage_ledger itself, through its pending
 * index): every completion adds its sums to exactly one of them.
 * - `usage_rollup_deltas`: appended by the statement that completes rows (the gateway's SETTLE, the
 *   reconciler's abandonment), one row per hour and key of the batch, in its transaction: no row is
 *   updated there, so no lock is taken and no two settlements wait for each other.
 * - `usage_rollups_hourly`: one row per key and UTC hour; `usage_rollups_daily`: one per UTC day,
 *   product key, model and status (the summary's dimensions: a year of a tenant is a few thousand
 *   rows, where the client's dimension would multiply it by the tenant's clients). Written only by
 *   billing-worker's compaction, which deletes deltas and adds them to both in one transaction.
 * A read sums daily rows for whole days, hourly rows for whole hours at the ends, deltas for the
 * whole-hour span, and ledger rows for partial hours and pending rows.
 *
 * The backfill takes every completed row there is into hourly and daily rows in this transaction
 * (it reads usage_ledger and writes only the new tables: the gateway goes on meanwhile). The
 * listing's indexes are the next migration's (built concurrently, outside a transaction).
 *
 * down: drops the tables (rows are untouched).
 */
export class UsageRollups1763900000000 implements MigrationInterface {
  name = 'UsageRollups1763900000000';

  async up(q: QueryRunner): Promise<void> {
    const sums = `requests bigint NOT NULL, input_tokens bigint NOT NULL, output_tokens bigint NOT NULL, cached_tokens bigint NOT NULL,
        debit bigint NOT NULL, errors bigint NOT NULL`;
    const status = `status text NOT NULL CHECK (status IN ('succeeded', 'failed', 'abandoned'))`;
    const dims = `product_key text NOT NULL, client_id text NOT NULL, model text NOT NULL, provider text NOT NULL, endpoint text NOT NULL, ${status}`;
    // No foreign key on deltas: its check would take a KEY SHARE lock on the tenant row in every
    // settlement; compaction drops deltas of a tenant deleted since.
    await q.query(`
      CREATE TABLE usage_rollup_deltas (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id uuid NOT NULL,
        hour timestamptz NOT NULL,
        ${dims},
        ${sums}
      )`);
    await q.query(`CREATE INDEX usage_rollup_deltas_tenant_idx ON usage_rollup_deltas (tenant_id, hour)`);
    await q.query(`
      CREATE TABLE usage_rollups_hourly (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        hour timestamptz NOT NULL,
        ${dims},
        ${sums},
        PRIMARY KEY (tenant_id, hour, ${DIMENSIONS})
      )`);
    await q.query(`
      CREATE TABLE usage_rollups_daily (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        day timestamptz NOT NULL,
        product_key text NOT NULL, model text NOT NULL, ${status},
        ${sums},
        PRIMARY KEY (tenant_id, day, ${DAILY_DIMENSIONS})
      )`);
    await q.query(`
      INSERT INTO usage_rollups_hourly (tenant_id, hour, ${DIMENSIONS}, requests, input_tokens, output_tokens, cached_tokens, debit, errors)
      SELECT tenant_id, date_trunc('hour', created_at, 'UTC'), ${DIMENSIONS}, ${SUMS_OF_ROWS}
        FROM usage_ledger WHERE status <> 'pending'
       GROUP BY tenant_id, date_trunc('hour', created_at, 'UTC'), ${DIMENSIONS}`);
    await q.query(`
      INSERT INTO usage_rollups_daily (tenant_id, day, ${DAILY_DIMENSIONS}, requests, input_tokens, output_tokens, cached_tokens, debit, errors)
      SELECT tenant_id, date_trunc('day', hour, 'UTC'), ${DAILY_DIMENSIONS}, sum(requests), sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(debit), sum(errors)
        FROM usage_rollups_hourly
       GROUP BY tenant_id, date_trunc('day', hour, 'UTC'), ${DAILY_DIMENSIONS}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE usage_rollup_deltas, usage_rollups_hourly, usage_rollups_daily');
  }
}
