import { Injectable } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';

/** Serialises compactions across billing-worker replicas (pg_advisory_xact_lock's key: "usage rollups"). */
const COMPACTION_LOCK = 35_0001;

const DIMENSIONS = 'product_key, client_id, model, provider, endpoint, status';
const SUMS = ['requests', 'input_tokens', 'output_tokens', 'cached_tokens', 'debit', 'errors'] as const;

/** The upsert of merged sums into one rollup table, from `source` (keyed rows of deltas), in key order. */
function mergeInto(table: string, bucket: string, bucketOf: string, source: string): string {
  return `INSERT INTO ${table} (tenant_id, ${bucket}, ${DIMENSIONS}, ${SUMS.join(', ')})
  SELECT tenant_id, ${bucketOf}, ${DIMENSIONS}, ${SUMS.map((c) => `sum(${c})`).join(', ')}
    FROM ${source}
   GROUP BY tenant_id, ${bucketOf}, ${DIMENSIONS}
   ORDER BY tenant_id, ${bucketOf}, ${DIMENSIONS}
  ON CONFLICT (tenant_id, ${bucket}, ${DIMENSIONS}) DO UPDATE
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
         ${mergeInto('usage_rollups_hourly', 'hour', 'hour', 'kept')}
       ),
       daily AS (
         ${mergeInto('usage_rollups_daily', 'day', `date_trunc('day', hour, 'UTC')`, 'kept')}
       )
       SELECT count(*)::int AS merged FROM moved`,
      [batchSize],
    );
    return row?.merged ?? 0;
  }

  /** Deltas not merged yet (a gauge: a growing number means the job is not keeping up). */
  async backlog(m: Tx): Promise<number> {
    const [row] = await m.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM usage_rollup_deltas`);
    return row?.n ?? 0;
  }
}
