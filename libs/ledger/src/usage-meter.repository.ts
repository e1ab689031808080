import { Injectable } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';
import { toUsageRow, USAGE_ROW_COLUMNS, type UsageRow, type UsageRowRecord } from './usage-row';

/** Rows waiting in a queue-like table and the age of the oldest (0 when none): what billing-worker's backlog gauges show. */
export interface Backlog {
  rows: number;
  oldestAgeSeconds: number;
}

/**
 * The backlog of a queue-like table, in one read: the rows `where` selects and the age, by Postgres'
 * clock, of the oldest of them by its `since` column. The arguments are the callers' own SQL text,
 * never input.
 */
export async function backlogOf(m: Tx, table: string, since: string, where: string): Promise<Backlog> {
  const rows: Array<{ n: number; age: number }> = await m.query(
    `SELECT count(*)::int AS n, COALESCE(EXTRACT(EPOCH FROM now() - min(${since})), 0)::float8 AS age FROM ${table} WHERE ${where}`,
  );
  return { rows: rows[0]!.n, oldestAgeSeconds: Math.max(0, rows[0]!.age) };
}

/** The usage ledger as the meter outbox (billing-worker): billable rows not yet accepted by Stripe. */
@Injectable()
export class UsageMeterRepository {
  /**
   * Claims up to `limit` billable unreported rows, of any tenant, for this transaction. Rows another
   * replica holds are skipped, not waited for; one it reported meanwhile no longer matches when re-checked.
   */
  async claim(m: Tx, limit: number): Promise<UsageRow[]> {
    const rows: UsageRowRecord[] = await m.query(
      `SELECT ${USAGE_ROW_COLUMNS} FROM usage_ledger
       WHERE status IN ('succeeded', 'abandoned') AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL
       ORDER BY completed_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    return rows.map(toUsageRow);
  }

  /** Marks claimed rows reported, each named with its tenant. */
  async markReported(m: Tx, rows: ReadonlyArray<Pick<UsageRow, 'id' | 'tenantId'>>): Promise<void> {
    if (rows.length === 0) return;
    await m.query(
      `UPDATE usage_ledger u SET meter_reported_at = now()
         FROM unnest($1::uuid[], $2::uuid[]) AS r(id, tenant_id)
        WHERE u.tenant_id = r.tenant_id AND u.id = r.id AND u.meter_reported_at IS NULL`,
      [rows.map((r) => r.id), rows.map((r) => r.tenantId)],
    );
  }

  /**
   * The outbox's backlog, for billing-worker's gauges: billable rows of every tenant not yet
   * reported, and how long (Postgres' clock) the oldest has waited since it completed. Aggregates
   * across tenants by design (a monitoring read), over the outbox's partial index.
   */
  async backlog(m: Tx): Promise<Backlog> {
    return backlogOf(m, 'usage_ledger', 'completed_at', `status IN ('succeeded', 'abandoned') AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL`);
  }
}
