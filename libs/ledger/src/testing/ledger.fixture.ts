import { randomUUID } from 'node:crypto';
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

/** A tenant's ledger rows as Postgres holds them (every column), oldest first. */
export function ledgerRows(ds: Sql, tenantId: string): Promise<Array<UsageRowRecord & { meter_reported_at: Date | null }>> {
  return ds.query(`SELECT * FROM usage_ledger WHERE tenant_id = $1 ORDER BY created_at, id`, [tenantId]);
}

export async function balanceOf(ds: Sql, tenantId: string): Promise<{ balance: number; reserved: number }> {
  const [row] = await ds.query<Array<{ balance: string; reserved: string }>>(`SELECT balance, reserved FROM credit_balances WHERE tenant_id = $1`, [tenantId]);
  return { balance: Number(row?.balance ?? 0), reserved: Number(row?.reserved ?? 0) };
}
