import { randomUUID } from 'node:crypto';
import type { Reservation, Settlement } from '../usage-ledger';
import type { UsageRowRecord } from '../usage-row';

/** The test database, as the specs' DataSource offers it. */
export interface Sql {
  query<T = unknown>(sql: string, parameters?: unknown[]): Promise<T>;
}

/** A tenant, with a credit_balances row of `balance` when given (none otherwise). */
export async function createTenant(ds: Sql, setup: { balance?: number } = {}): Promise<string> {
  const id = randomUUID();
  await ds.query(`INSERT INTO tenants (id, name, primary_email, plan) VALUES ($1, $2, $3, 'free')`, [id, `t-${id.slice(0, 8)}`, `ops-${id.slice(0, 8)}@example.test`]);
  if (setup.balance !== undefined) await ds.query(`INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, $2)`, [id, setup.balance]);
  return id;
}

/** A ledger row as Postgres holds it (SELECT *: the usage columns, the meter's mark and the "upstream called" stamp). */
export type LedgerRow = UsageRowRecord & { meter_reported_at: Date | null; upstream_called_at: Date | null };

/** A tenant's ledger rows as Postgres holds them (every column), oldest first. */
export function ledgerRows(ds: Sql, tenantId: string): Promise<LedgerRow[]> {
  return ds.query(`SELECT * FROM usage_ledger WHERE tenant_id = $1 ORDER BY created_at, id`, [tenantId]);
}

export async function balanceOf(ds: Sql, tenantId: string): Promise<{ balance: number; reserved: number }> {
  const [row] = await ds.query<Array<{ balance: string; reserved: string }>>(`SELECT balance, reserved FROM credit_balances WHERE tenant_id = $1`, [tenantId]);
  return { balance: Number(row?.balance ?? 0), reserved: Number(row?.reserved ?? 0) };
}

/** A billable reservation as the gateway makes one (fake-chat-1 at its catalogue prices); `over` replaces any field. */
export function aReservation(tenantId: string, estimate: number, over: Partial<Reservation> = {}): Reservation {
  return {
    id: randomUUID(),
    tenantId,
    clientId: 'ffc_ledgerSpec',
    productKey: 'core',
    provider: 'inhouse',
    model: 'fake-chat-1',
    endpoint: 'chat.completions',
    stream: false,
    estimate,
    zeroRatedReason: null,
    requestId: `req-${randomUUID()}`,
    inputPer1k: 1000,
    outputPer1k: 2000,
    cachedInputPer1k: null,
    ...over,
  };
}

/** `r` succeeded, debiting `debit`; `over` replaces any field. */
export function aSettlement(r: Reservation, debit: number, over: Partial<Settlement> = {}): Settlement {
  return {
    id: r.id,
    tenantId: r.tenantId,
    status: 'succeeded',
    inputTokens: 7,
    outputTokens: 5,
    cachedTokens: 0,
    debit,
    provider: 'inhouse',
    latencyMs: 3,
    usageEstimated: false,
    errorCode: null,
    ...over,
  };
}

/** A budget's month row as Postgres holds it (zeros when there is none); `month`: `YYYY-MM-01`, default the running UTC month. */
export async function budgetMonthOf(ds: Sql, tenantId: string, kind: 'client' | 'product', scopeId: string, month?: string): Promise<{ spent: number; reserved: number; exists: boolean }> {
  const [row] = await ds.query<Array<{ spent: string; reserved: string }>>(
    `SELECT spent, reserved FROM budget_months WHERE tenant_id = $1 AND scope_kind = $2 AND scope_id = $3
        AND month = COALESCE($4::date, date_trunc('month', now() AT TIME ZONE 'UTC')::date)`,
    [tenantId, kind, scopeId, month ?? null],
  );
  return { spent: Number(row?.spent ?? 0), reserved: Number(row?.reserved ?? 0), exists: row !== undefined };
}

/** A budget set straight in the table, without the running month's row (as at a month's first request). */
export async function insertBudget(ds: Sql, tenantId: string, kind: 'client' | 'product', scopeId: string, monthlyCap: number): Promise<void> {
  await ds.query(`INSERT INTO budgets (tenant_id, scope_kind, scope_id, monthly_cap) VALUES ($1, $2, $3, $4)`, [tenantId, kind, scopeId, monthlyCap]);
}
