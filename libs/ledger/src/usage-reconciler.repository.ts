import { Injectable } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';

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
    const rows: Array<{ tenant_id: string; reserved: string }> = await m.query(
      `WITH picked AS (
         SELECT id, tenant_id FROM usage_ledger
          WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1)
          ORDER BY created_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), settled AS (
         UPDATE usage_ledger u SET status = 'abandoned', completed_at = now(), error_code = COALESCE(u.error_code, 'abandoned')
           FROM picked WHERE u.tenant_id = picked.tenant_id AND u.id = picked.id AND u.status = 'pending'
         RETURNING u.tenant_id, u.reserved
       )
       -- A SELECT around the UPDATE: TypeORM answers a bare UPDATE with [rows, count], a SELECT with rows.
       SELECT tenant_id, reserved::text AS reserved FROM settled`,
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
    let released = 0;
    for (const amount of perTenant.values()) released += amount;
    return { settled: rows.length, released, tenants: tenants.length };
  }
}
