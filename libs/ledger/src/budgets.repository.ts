import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, type Tx } from '@flagship/persistence';

/** What a budget caps: the requests of one OAuth client, or those sent with one product key. */
export type BudgetKind = 'client' | 'product';
export const BUDGET_KINDS: readonly BudgetKind[] = ['client', 'product'];

/** A budget and the UTC calendar month now running under it (micro-credits). */
export interface Budget {
  kind: BudgetKind;
  /** The OAuth client id, or the product key (`x-service-product-key`). */
  scopeId: string;
  monthlyCap: number;
  /** This month's: debited by completed requests, and held by requests still in flight. */
  spent: number;
  reserved: number;
  /** `YYYY-MM`, UTC. */
  month: string;
  /** ISO 8601, milliseconds, UTC. */
  createdAt: string;
  updatedAt: string;
}

const THIS_MONTH = `date_trunc('month', now() AT TIME ZONE 'UTC')::date`;

const COLUMNS = `g.scope_kind, g.scope_id, g.monthly_cap::text AS monthly_cap, COALESCE(m.spent, 0)::text AS spent, COALESCE(m.reserved, 0)::text AS reserved,
  to_char(${THIS_MONTH}, 'YYYY-MM') AS month, g.created_at, g.updated_at`;
const FROM = `budgets g LEFT JOIN budget_months m
  ON m.tenant_id = g.tenant_id AND m.scope_kind = g.scope_kind AND m.scope_id = g.scope_id AND m.month = ${THIS_MONTH}`;

interface BudgetRow {
  scope_kind: BudgetKind;
  scope_id: string;
  monthly_cap: string;
  spent: string;
  reserved: string;
  month: string;
  created_at: Date;
  updated_at: Date;
}

const toBudget = (r: BudgetRow): Budget => ({
  kind: r.scope_kind,
  scopeId: r.scope_id,
  monthlyCap: Number(r.monthly_cap),
  spent: Number(r.spent),
  reserved: Number(r.reserved),
  month: r.month,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

/** A listed budget's keyset position: its creation instant (as `Budget.createdAt`), kind and scope id. */
export interface BudgetPosition {
  at: string;
  kind: BudgetKind;
  scopeId: string;
}

/**
 * The budgets as management-api's rules use them (the port: BudgetsRepository on Postgres, an
 * in-memory twin in the service's unit specs). Every method names the tenant; another tenant's budget
 * looks missing.
 */
export abstract class Budgets {
  /** Oldest first (created, then kind, then scope id); `after`: the previous page's last budget. */
  abstract list(tenantId: string, page: { limit: number; after?: BudgetPosition }): Promise<Budget[]>;
  abstract get(tenantId: string, kind: BudgetKind, scopeId: string, m?: Tx): Promise<Budget | null>;
  /** Sets or changes the cap, in the caller's transaction (see BudgetsRepository.set for the month's figures). */
  abstract set(m: Tx, tenantId: string, kind: BudgetKind, scopeId: string, monthlyCap: number): Promise<Budget>;
  /** Whether there was such a budget; what its month spent stays. */
  abstract remove(tenantId: string, kind: BudgetKind, scopeId: string): Promise<boolean>;
}

/**
 * Tenants' budgets as admins set them, with the running month's totals. The totals themselves are
 * written only by the gateway's statements (UsageLedgerRepository: RESERVE, SETTLE, RELEASE) and the
 * reconciler (UsageReconcilerRepository.settleBudgets). Every statement names the tenant.
 */
@Injectable()
export class BudgetsRepository extends Budgets {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  /** Oldest first; `after`: the keyset position (created_at, kind, scope id) of the previous page's last budget. */
  async list(tenantId: string, page: { limit: number; after?: BudgetPosition }): Promise<Budget[]> {
    const rows: BudgetRow[] = page.after
      ? await this.ds.query(
          `SELECT ${COLUMNS} FROM ${FROM} WHERE g.tenant_id = $1 AND (g.created_at, g.scope_kind, g.scope_id) > ($2::timestamptz, $3, $4)
            ORDER BY g.created_at, g.scope_kind, g.scope_id LIMIT $5`,
          [tenantId, page.after.at, page.after.kind, page.after.scopeId, page.limit],
        )
      : await this.ds.query(`SELECT ${COLUMNS} FROM ${FROM} WHERE g.tenant_id = $1 ORDER BY g.created_at, g.scope_kind, g.scope_id LIMIT $2`, [tenantId, page.limit]);
    return rows.map(toBudget);
  }

  async get(tenantId: string, kind: BudgetKind, scopeId: string, m?: Tx): Promise<Budget | null> {
    const rows: BudgetRow[] = await (m ?? this.ds).query(
      `SELECT ${COLUMNS} FROM ${FROM} WHERE g.tenant_id = $1 AND g.scope_kind = $2 AND g.scope_id = $3`,
      [tenantId, kind, scopeId],
    );
    return rows[0] ? toBudget(rows[0]) : null;
  }

  /**
   * Sets (or changes) a budget's cap, in the caller's transaction. The running month's row is made
   * here too, so the first request after a budget is set is admitted in one statement (a month's first
   * request otherwise makes it, at zero: the budgeted reserve statements' `born`). A budget set in the middle of a month starts
   * from what its client or product key already spent this month (the debits of its completed rows;
   * a request in flight at that moment is not counted), so "monthly" means the calendar month, not
   * "since it was set"; a month row already there (the cap changed, or the budget set again) keeps
   * its figures. A cap lowered below what is spent refuses every request until the month turns.
   */
  async set(m: Tx, tenantId: string, kind: BudgetKind, scopeId: string, monthlyCap: number): Promise<Budget> {
    await m.query(
      `INSERT INTO budgets (tenant_id, scope_kind, scope_id, monthly_cap) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, scope_kind, scope_id) DO UPDATE SET monthly_cap = EXCLUDED.monthly_cap, updated_at = now()`,
      [tenantId, kind, scopeId, monthlyCap],
    );
    // The month's debits so far: the tenant's rows of this month, by usage_ledger_tenant_idx (tenant_id, created_at).
    await m.query(
      `INSERT INTO budget_months (tenant_id, scope_kind, scope_id, month, spent)
       SELECT $1, $2, $3, ${THIS_MONTH}, COALESCE(sum(u.debit), 0)
         FROM usage_ledger u
        WHERE u.tenant_id = $1 AND u.created_at >= (${THIS_MONTH})::timestamp AT TIME ZONE 'UTC'
          AND CASE WHEN $2 = 'client' THEN u.client_id = $3 ELSE u.product_key = $3 END
       ON CONFLICT DO NOTHING`,
      [tenantId, kind, scopeId],
    );
    return (await this.get(tenantId, kind, scopeId, m))!;
  }

  /**
   * Whether there was such a budget. Its month rows stay: requests reserved under it still settle
   * there, and a budget set again this month goes on from what was spent.
   */
  async remove(tenantId: string, kind: BudgetKind, scopeId: string): Promise<boolean> {
    // A SELECT around the DELETE: TypeORM answers a bare DELETE ... RETURNING with [rows, count].
    const rows: unknown[] = await this.ds.query(
      `WITH gone AS (DELETE FROM budgets WHERE tenant_id = $1 AND scope_kind = $2 AND scope_id = $3 RETURNING scope_id) SELECT scope_id FROM gone`,
      [tenantId, kind, scopeId],
    );
    return rows.length > 0;
  }

  /** A tenant's budgets, in the caller's transaction (the quota `budgets-per-tenant` counts them). */
  async count(m: Tx, tenantId: string): Promise<number> {
    const [row] = (await m.query('SELECT count(*)::int AS n FROM budgets WHERE tenant_id = $1', [tenantId])) as Array<{ n: number }>;
    return row?.n ?? 0;
  }
}
