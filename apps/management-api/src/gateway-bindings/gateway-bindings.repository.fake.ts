import type { TransactionRunner } from '@flagship/persistence';
import { snapshotTransactions } from '../testing/inline-transactions';
import { type BindingAuditRecord, type BindingAuditRow, type BindingFields, type BindingRow, GatewayBindingsRepository } from './gateway-bindings.repository';

interface State {
  rows: BindingRow[];
  audit: Array<BindingAuditRow & { tenantId: string }>;
}

const uniqueViolation = (): Error => Object.assign(new Error('duplicate key value violates unique constraint "gateway_bindings_pkey"'), { code: '23505' });
const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const cloneRow = (r: BindingRow): BindingRow => ({ ...r, rolloutPlan: json(r.rolloutPlan), spendCaps: json(r.spendCaps), createdAt: new Date(r.createdAt), updatedAt: new Date(r.updatedAt) });
const copy = (s: State): State => ({ rows: s.rows.map(cloneRow), audit: [...s.audit] });

/**
 * In-memory twin of SqlGatewayBindingsRepository for the service's unit spec (the agreement spec holds
 * both to the same cases). Its transaction runner undoes what a throwing transaction wrote, as Postgres does.
 */
export class FakeGatewayBindingsRepository extends GatewayBindingsRepository {
  private state: State = { rows: [], audit: [] };
  private clock = Date.parse('2026-01-01T00:00:00Z');

  readonly transactions: Pick<TransactionRunner, 'run'> = snapshotTransactions({ get: () => this.state, set: (saved) => void (this.state = saved) }, copy);

  /** What the gateway-bindings-per-tenant quota counts. */
  count(tenantId: string): number {
    return this.state.rows.filter((r) => r.tenantId === tenantId).length;
  }

  /** Every tenant's bindings: the table the rollouts' fake joins its states to, as claimDue does in Postgres. */
  all(): BindingRow[] {
    return this.state.rows.map(cloneRow);
  }

  private now(): Date {
    this.clock += 1000;
    return new Date(this.clock);
  }

  private at(tenantId: string, productKey: string): BindingRow | undefined {
    return this.state.rows.find((r) => r.tenantId === tenantId && r.productKey === productKey);
  }

  async list(tenantId: string): Promise<BindingRow[]> {
    return this.state.rows
      .filter((r) => r.tenantId === tenantId)
      .sort((a, b) => (a.productKey < b.productKey ? -1 : a.productKey > b.productKey ? 1 : 0))
      .map(cloneRow);
  }

  async find(tenantId: string, productKey: string): Promise<BindingRow | null> {
    const row = this.at(tenantId, productKey);
    return row ? cloneRow(row) : null;
  }

  async lock(_m: unknown, tenantId: string, productKey: string): Promise<BindingRow | null> {
    return this.find(tenantId, productKey);
  }

  async insert(_m: unknown, tenantId: string, productKey: string, f: BindingFields): Promise<BindingRow> {
    if (this.at(tenantId, productKey)) throw uniqueViolation();
    const at = this.now();
    const row: BindingRow = { tenantId, productKey, ...json(f), version: 1, createdAt: at, updatedAt: at };
    this.state.rows.push(row);
    return cloneRow(row);
  }

  async update(_m: unknown, tenantId: string, productKey: string, expectedVersion: number, f: BindingFields): Promise<BindingRow | null> {
    const row = this.at(tenantId, productKey);
    if (!row || row.version !== expectedVersion) return null;
    Object.assign(row, json(f), { version: row.version + 1, updatedAt: this.now() });
    return cloneRow(row);
  }

  async delete(_m: unknown, tenantId: string, productKey: string): Promise<boolean> {
    const before = this.state.rows.length;
    this.state.rows = this.state.rows.filter((r) => !(r.tenantId === tenantId && r.productKey === productKey));
    return this.state.rows.length < before;
  }

  async audit(_m: unknown, tenantId: string, r: BindingAuditRecord): Promise<void> {
    this.state.audit.push({ tenantId, ...json(r), createdAt: this.now() });
  }

  async auditTrail(tenantId: string, productKey: string): Promise<BindingAuditRow[]> {
    return this.state.audit.filter((a) => a.tenantId === tenantId && a.productKey === productKey).map(({ tenantId: _t, ...a }) => a);
  }
}
