import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

export interface UnmeteredRow {
  id: string;
  tenantId: string;
  productKey: string;
  debit: number;
  completedAt: Date;
}

/** The usage ledger as the meter outbox: billable rows not yet accepted by Stripe. */
@Injectable()
export class UsageMeterRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /**
   * Claims up to `limit` billable unreported rows for this transaction. Rows another replica holds
   * are skipped, not waited for; one it reported meanwhile no longer matches when re-checked.
   */
  async claim(m: EntityManager, limit: number): Promise<UnmeteredRow[]> {
    const rows: Array<{ id: string; tenant_id: string; product_key: string; debit: string; completed_at: Date | null; created_at: Date }> = await m.query(
      `SELECT id, tenant_id, product_key, debit, completed_at, created_at FROM usage_ledger
       WHERE status = 'succeeded' AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL
       ORDER BY completed_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, productKey: r.product_key, debit: Number(r.debit), completedAt: r.completed_at ?? r.created_at }));
  }

  async markReported(m: EntityManager, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await m.query(`UPDATE usage_ledger SET meter_reported_at = now() WHERE id = ANY($1::uuid[]) AND meter_reported_at IS NULL`, [ids]);
  }

  async unreportedCount(): Promise<number> {
    const rows: Array<{ n: string }> = await this.ds.query(
      `SELECT count(*) AS n FROM usage_ledger WHERE status = 'succeeded' AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL`,
    );
    return Number(rows[0].n);
  }
}
