import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Monthly budgets per OAuth client and per product key (micro-credits), set by tenant admins.
 * `budgets` holds the caps; `budget_months` what each budget has spent and holds reserved in one UTC
 * calendar month, written only by the ledger's own statements (libs/ledger) in the same statement as
 * the tenant's balance, and always after the balance row's lock. A month row outlives its budget's
 * deletion, so a settlement of a request reserved before the deletion still finds what it reserved
 * (and a budget set again in the same month goes on from what was spent under it).
 *
 * usage_ledger records, per row, the budget month it reserved in and which of its two budgets held
 * its estimate, so the settlement, release and reconciler take back exactly what the reservation
 * put there, whatever budgets were set or removed in between. Rows written before hold none.
 *
 * down: the tables and columns are dropped (budgets and their month totals are lost).
 */
export class Budgets1763840000000 implements MigrationInterface {
  name = 'Budgets1763840000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE budgets (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        scope_kind text NOT NULL CHECK (scope_kind IN ('client', 'product')),
        scope_id text NOT NULL CHECK (length(scope_id) BETWEEN 1 AND 64),
        monthly_cap bigint NOT NULL CHECK (monthly_cap >= 0),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, scope_kind, scope_id)
      )`);
    await q.query(`
      CREATE TABLE budget_months (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        scope_kind text NOT NULL CHECK (scope_kind IN ('client', 'product')),
        scope_id text NOT NULL,
        month date NOT NULL CHECK (month = date_trunc('month', month)::date),
        spent bigint NOT NULL DEFAULT 0 CHECK (spent >= 0),
        reserved bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, scope_kind, scope_id, month)
      )`);
    // NOT VALID: the existing rows (all false / NULL) satisfy it; validating would scan the ledger under its lock.
    await q.query(`ALTER TABLE usage_ledger
      ADD COLUMN budget_month date NULL,
      ADD COLUMN client_budget_held boolean NOT NULL DEFAULT false,
      ADD COLUMN product_budget_held boolean NOT NULL DEFAULT false,
      ADD CONSTRAINT usage_ledger_budget_month_iff_held CHECK ((budget_month IS NOT NULL) = (client_budget_held OR product_budget_held)) NOT VALID`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger DROP CONSTRAINT usage_ledger_budget_month_iff_held, DROP COLUMN budget_month, DROP COLUMN client_budget_held, DROP COLUMN product_budget_held`);
    await q.query(`DROP TABLE budget_months`);
    await q.query(`DROP TABLE budgets`);
  }
}
