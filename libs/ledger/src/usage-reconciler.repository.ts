import { Injectable } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';
import { budgetSettlement } from './usage-ledger.repository';

export interface SettledBatch {
  /** Rows moved from pending to abandoned. */
  settled: number;
  /** Micro-credits given back to credit_balances.reserved. */
  released: number;
  /** Distinct tenants whose reservation shrank. */
  tenants: number;
}

/**
 * The usage ledger's crash recovery (billing-worker's reconciler), inside the caller's transaction
 * (one per batch). It works across tenants by design: it picks the oldest stale rows of any tenant,
 * then names each picked row's tenant when it releases the holds. Rows are
 * locked with SKIP LOCKED, so replicas split the work instead of queueing behind each other, and
 * only a row still `pending` under its lock is settled: a reservation is released at most once,
 * whether another replica or the gateway itself got there first.
 */
@Injectable()
export class UsageReconcilerRepository {
  async abandonStale(m: Tx, olderThanS: number, batchSize: number): Promise<SettledBatch> {
    const rows: Array<{ id: string; tenant_id: string; reserved: string }> = await m.query(
      `WITH picked AS (
         SELECT id, tenant_id FROM usage_ledger
          WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1)
          ORDER BY created_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), settled AS (
         UPDATE usage_ledger u SET status = 'abandoned', completed_at = now(), error_code = COALESCE(u.error_code, 'abandoned')
           FROM picked WHERE u.tenant_id = picked.tenant_id AND u.id = picked.id AND u.status = 'pending'
         RETURNING u.id, u.tenant_id, u.reserved
       )
       -- A SELECT around the UPDATE: TypeORM answers a bare UPDATE with [rows, count], a SELECT with rows.
       SELECT id, tenant_id, reserved::text AS reserved FROM settled`,
      [olderThanS, batchSize],
    );
    const perTenant = new Map<string, number>();
    for (const r of rows) perTenant.set(r.tenant_id, (perTenant.get(r.tenant_id) ?? 0) + Number(r.reserved));
    for (const [tenant, amount] of perTenant) if (amount === 0) perTenant.delete(tenant);
    const tenants = [...perTenant.keys()].sort();
    if (tenants.length > 0) {
      // Balance rows locked in one order by every replica: two batches sharing tenants wait, never deadlock.
      await m.query('SELECT 1 FROM credit_balances WHERE tenant_id = ANY($1::uuid[]) ORDER BY tenant_id FOR UPDATE', [tenants]);
      await m.query(
        `UPDATE credit_balances b SET reserved = b.reserved - v.amount, updated_at = now()
           FROM unnest($1::uuid[], $2::bigint[]) AS v(tenant_id, amount)
          WHERE b.tenant_id = v.tenant_id`,
        [tenants, tenants.map((t) => String(perTenant.get(t)))],
      );
    }
    await this.settleBudgets(m, rows.map((r) => ({ tenantId: r.tenant_id, id: r.id })));
    let released = 0;
    for (const amount of perTenant.values()) released += amount;
    return { settled: rows.length, released, tenants: tenants.length };
  }

  /**
   * The budget side of rows this transaction just moved out of `pending` (abandoned): each budget
   * month a row reserved in gets its `reserved` back and its `debit` (as the row now holds it: 0 when
   * released, its estimate when charged) added to `spent`. Call it once per row, in the transaction
   * that moved it, after the balance update (its balance lock is taken again here, a no-op when held,
   * so the month rows are locked after it, as in every ledger statement).
   */
  async settleBudgets(m: Tx, moved: ReadonlyArray<{ tenantId: string; id: string }>): Promise<void> {
    if (moved.length === 0) return;
    await m.query(
      `WITH rows AS (
         SELECT u.tenant_id, u.client_id, u.product_key, u.budget_month, u.client_budget_held, u.product_budget_held, u.reserved, u.debit
           FROM usage_ledger u JOIN unnest($1::uuid[], $2::uuid[]) AS v(tenant_id, id) ON u.tenant_id = v.tenant_id AND u.id = v.id
          WHERE u.budget_month IS NOT NULL
       ),
       locked AS (
         SELECT c.tenant_id FROM credit_balances c WHERE c.tenant_id IN (SELECT tenant_id FROM rows) ORDER BY c.tenant_id FOR UPDATE
       ),
       ${budgetSettlement('rows')}
       SELECT count(*)::int AS n FROM budget_moved`,
      [moved.map((r) => r.tenantId), moved.map((r) => r.id)],
    );
  }
}
