import { Injectable } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';
import { type LowBalanceCrossing, type LowBalanceCrossingRow, RECORDED_CROSSINGS, toCrossing } from './low-balance.repository';
import { budgetSettlement, LOW_BALANCE_CROSSINGS } from './statements/completion.sql';
import { rollupColumns, rollupDeltas } from './statements/rollup.sql';
import { type Backlog, backlogOf } from './usage-meter.repository';

export interface SettledBatch {
  /** Rows moved from pending to abandoned. */
  settled: number;
  /** Micro-credits given back to credit_balances.reserved. */
  released: number;
  /** Of `settled`, the rows whose upstream was called, charged their reserved estimate. */
  charged: number;
  /** Micro-credits debited for them. */
  debited: number;
  /** Distinct tenants whose reservation shrank. */
  tenants: number;
  /**
   * Low-balance crossings the charges recorded (in the caller's transaction: announce them only once
   * it has committed, as the gateway announces a settlement's).
   */
  crossings: LowBalanceCrossing[];
}

/** What the reconciler writes on a row it settles, by whether the gateway stamped it "upstream called". */
export const ABANDONED_UPSTREAM_CALLED = 'abandoned_upstream_called';
export const ABANDONED_NOT_CALLED = 'abandoned';

/**
 * The usage ledger's crash recovery (billing-worker's reconciler), inside the caller's transaction
 * (one per batch). It works across tenants by design: it picks the oldest stale rows of any tenant,
 * then names each picked row's tenant when it moves their credit. Rows are locked with SKIP LOCKED,
 * so replicas split the work instead of queueing behind each other, and only a row still `pending`
 * under its lock is settled: a reservation is released at most once, whether another replica or the
 * gateway itself got there first.
 *
 * A row the gateway stamped "upstream called" (migration 1763840100000) is charged its reserved
 * estimate: the provider had the request, and the client may have had its answer (the gateway
 * answers only once the stamp is written), so the estimate (the input's tokens and max_tokens x n at
 * the row's own prices) is what the request could have cost, never more, and the row says it was
 * estimated (`usage_estimated`, `error_code` abandoned_upstream_called). A row without the stamp
 * never reached the provider and was never answered: it is released at zero (`error_code` abandoned).
 */
@Injectable()
export class UsageReconcilerRepository {
  async abandonStale(m: Tx, olderThanS: number, batchSize: number): Promise<SettledBatch> {
    const rows: Array<{ id: string; tenant_id: string; reserved: string; debit: string }> = await m.query(
      `WITH picked AS (
         SELECT id, tenant_id FROM usage_ledger
          WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1)
          ORDER BY created_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), settled AS (
         UPDATE usage_ledger u
            SET status = 'abandoned', completed_at = now(),
                debit = CASE WHEN u.upstream_called_at IS NOT NULL AND NOT u.zero_rated THEN u.reserved ELSE 0 END,
                usage_estimated = u.upstream_called_at IS NOT NULL,
                error_code = COALESCE(u.error_code, CASE WHEN u.upstream_called_at IS NOT NULL THEN '${ABANDONED_UPSTREAM_CALLED}' ELSE '${ABANDONED_NOT_CALLED}' END)
           FROM picked WHERE u.tenant_id = picked.tenant_id AND u.id = picked.id AND u.status = 'pending'
         RETURNING u.id, u.tenant_id, u.reserved, u.debit, u.client_id, u.product_key, ${rollupColumns('u')}
       ),
       -- Its sums go to the usage rollups' deltas in the same statement, as a settlement's do.
       ${rollupDeltas('settled')}
       -- A SELECT around the UPDATE: TypeORM answers a bare UPDATE with [rows, count], a SELECT with rows.
       SELECT id, tenant_id, reserved::text AS reserved, debit::text AS debit FROM settled`,
      [olderThanS, batchSize],
    );
    const perTenant = new Map<string, { released: number; debited: number }>();
    let charged = 0;
    for (const r of rows) {
      const t = perTenant.get(r.tenant_id) ?? { released: 0, debited: 0 };
      t.released += Number(r.reserved);
      t.debited += Number(r.debit);
      if (Number(r.debit) > 0) charged++;
      perTenant.set(r.tenant_id, t);
    }
    for (const [tenant, t] of perTenant) if (t.released === 0 && t.debited === 0) perTenant.delete(tenant);
    const tenants = [...perTenant.keys()].sort();
    let crossings: LowBalanceCrossing[] = [];
    if (tenants.length > 0) {
      // Balance rows locked in one order by every replica: two batches sharing tenants wait, never deadlock.
      await m.query('SELECT 1 FROM credit_balances WHERE tenant_id = ANY($1::uuid[]) ORDER BY tenant_id FOR UPDATE', [tenants]);
      // A debit here can cross a tenant's low-balance threshold like any settlement: recorded the same way.
      const recorded: Array<{ crossing: LowBalanceCrossingRow }> = await m.query(
        `WITH moved_balances AS (
           UPDATE credit_balances b SET reserved = b.reserved - v.released, balance = b.balance - v.debited, updated_at = now()
             FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS v(tenant_id, released, debited)
            WHERE b.tenant_id = v.tenant_id
           RETURNING b.tenant_id, b.balance
         ),
         ${LOW_BALANCE_CROSSINGS}
         SELECT ${RECORDED_CROSSINGS} AS crossing FROM recorded`,
        [tenants, tenants.map((t) => String(perTenant.get(t)!.released)), tenants.map((t) => String(perTenant.get(t)!.debited))],
      );
      crossings = recorded.map((r) => toCrossing(r.crossing));
    }
    await this.settleBudgets(m, rows.map((r) => ({ tenantId: r.tenant_id, id: r.id })));
    let released = 0;
    let debited = 0;
    for (const t of perTenant.values()) {
      released += t.released;
      debited += t.debited;
    }
    return { settled: rows.length, released, charged, debited, tenants: tenants.length, crossings };
  }

  /**
   * Rows still `pending` (of every tenant: a monitoring read, over the pending partial index) and
   * the age of the oldest by Postgres' clock. Requests in flight are pending for as long as they
   * run; one older than RECONCILE_PENDING_AFTER_S plus a pass means the reconciler is not settling.
   */
  async pendingBacklog(m: Tx): Promise<Backlog> {
    return backlogOf(m, 'usage_ledger', 'created_at', `status = 'pending'`);
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
