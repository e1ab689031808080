import { Injectable } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';
import { rollupDeltas } from './statements/rollup.sql';

/**
 * A tenant's (`$1`) rollups recomputed from its completed rows in ONE statement: see
 * UsageRollupsRepository.rebuild, which runs it under the compaction lock.
 */
export const REBUILD_TENANT_ROLLUPS = `
WITH gone_deltas AS (DELETE FROM usage_rollup_deltas WHERE tenant_id = $1),
     gone_hours AS (DELETE FROM usage_rollups_hourly WHERE tenant_id = $1),
     gone_days AS (DELETE FROM usage_rollups_daily WHERE tenant_id = $1),
     completed AS (SELECT * FROM usage_ledger WHERE tenant_id = $1 AND status <> 'pending'),
     ${rollupDeltas('completed')}
SELECT 1`;

/** Serialises compactions across billing-worker replicas (pg_advisory_xact_lock's key: "usage rollups"). */
const COMPACTION_LOCK = 35_0001;

/** The keys of hourly rows (and deltas), and of daily rows (the summary's dimensions): migration 1763900000000. */
const HOURLY_DIMENSIONS = 'product_key, client_id, model, provider, endpoint, status';
const DAILY_DIMENSIONS = 'product_key, model, status';
const SUMS = ['requests', 'input_tokens', 'output_tokens', 'cached_tokens', 'debit', 'errors'] as const;

/** The upsert of merged sums into one rollup table, from `source` (keyed rows of deltas), in key order. */
function mergeInto(table: string, bucket: string, bucketOf: string, dims: string, source: string): string {
  return `INSERT INTO ${table} (tenant_id, ${bucket}, ${dims}, ${SUMS.join(', ')})
  SELECT tenant_id, ${bucketOf}, ${dims}, ${SUMS.map((c) => `sum(${c})`).join(', ')}
    FROM ${source}
   GROUP BY tenant_id, ${bucketOf}, ${dims}
   ORDER BY tenant_id, ${bucketOf}, ${dims}
  ON CONFLICT (tenant_id, ${bucket}, ${dims}) DO UPDATE
     SET ${SUMS.map((c) => `${c} = ${table}.${c} + excluded.${c}`).join(', ')}`;
}

/**
 * The usage rollups' compaction (billing-worker's usage-rollups job; migration 1763900000000): the
 * deltas the completing statements append are deleted and their sums added to the hourly and daily
 * rows in ONE statement, so a delta counts either as itself or in the merged rows, never both and
 * never neither, whatever crashes when. Compactions take one advisory lock, so two replicas never
 * upsert the same merged rows at once. Deltas of a tenant deleted since are dropped with it.
 */
@Injectable()
export class UsageRollupsRepository {
  /** Merges up to `batchSize` of the oldest deltas; resolves how many were merged (0: another replica holds the lock or none left). */
  async compact(m: Tx, batchSize: number): Promise<number> {
    const [lock] = await m.query<Array<{ got: boolean }>>(`SELECT pg_try_advisory_xact_lock($1) AS got`, [COMPACTION_LOCK]);
    if (!lock?.got) return 0;
    const [row] = await m.query<Array<{ merged: number }>>(
      `WITH moved AS (
         DELETE FROM usage_rollup_deltas d
          WHERE d.id IN (SELECT id FROM usage_rollup_deltas ORDER BY id LIMIT $1)
         RETURNING d.*
       ),
       kept AS MATERIALIZED (
         SELECT m.* FROM moved m WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = m.tenant_id)
       ),
       hourly AS (
         ${mergeInto('usage_rollups_hourly', 'hour', 'hour', HOURLY_DIMENSIONS, 'kept')}
       ),
       daily AS (
         ${mergeInto('usage_rollups_daily', 'day', `date_trunc('day', hour, 'UTC')`, DAILY_DIMENSIONS, 'kept')}
       )
       SELECT count(*)::int AS merged FROM moved`,
      [batchSize],
    );
    return row?.merged ?? 0;
  }

  /**
   * A tenant's rollups recomputed from its completed rows, in one statement (one snapshot): its rollup
   * rows are deleted and its rows added back as deltas (compaction merges them). A settlement
   * committed after the snapshot is counted once, by its own delta (its row was pending in the
   * snapshot). For rows written into usage_ledger by anything but the ledger's statements (an import,
   * a gateway older than the rollups during a rolling deploy); waits for a running compaction.
   */
  async rebuild(m: Tx, tenantId: string): Promise<void> {
    await m.query(`SELECT pg_advisory_xact_lock($1)`, [COMPACTION_LOCK]);
    await m.query(REBUILD_TENANT_ROLLUPS, [tenantId]);
  }

  /** Deltas not merged yet (a gauge: a growing number means the job is not keeping up). */
  async backlog(m: Tx): Promise<number> {
    const [row] = await m.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM usage_rollup_deltas`);
    return row?.n ?? 0;
  }
}
