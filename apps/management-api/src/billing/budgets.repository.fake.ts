import { type Budget, type BudgetKind, type BudgetPosition, Budgets } from '@flagship/ledger';
import type { Tx } from '@flagship/persistence';

interface StoredBudget {
  tenantId: string;
  kind: BudgetKind;
  scopeId: string;
  monthlyCap: number;
  createdAt: string;
  updatedAt: string;
}

interface MonthFigures {
  spent: number;
  reserved: number;
}

/** A completed request's debit this month, as the usage ledger holds it. */
export interface FakeDebit {
  tenantId: string;
  clientId: string;
  productKey: string;
  debit: number;
}

const key = (tenantId: string, kind: BudgetKind, scopeId: string): string => `${tenantId}\u0000${kind}\u0000${scopeId}`;
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const position = (b: StoredBudget): BudgetPosition => ({ at: b.createdAt, kind: b.kind, scopeId: b.scopeId });
const byPosition = (a: BudgetPosition, b: BudgetPosition): number => compare(a.at, b.at) || compare(a.kind, b.kind) || compare(a.scopeId, b.scopeId);

/**
 * In-memory twin of BudgetsRepository for service unit tests: same contract, no I/O. It keeps only the
 * running UTC month: `months` holds what the gateway's reservations and settlements leave there
 * (`spend`), `debits` the month's completed requests a budget set mid-month starts from (`debit`).
 * Each write moves its clock on by at least 1 ms, so budgets keep the order they were set in.
 */
export class FakeBudgets extends Budgets {
  readonly budgets = new Map<string, StoredBudget>();
  readonly months = new Map<string, MonthFigures>();
  readonly debits: FakeDebit[] = [];
  private clock = 0;

  private stamp(): string {
    this.clock = Math.max(this.clock + 1, Date.now());
    return new Date(this.clock).toISOString();
  }

  private view(b: StoredBudget): Budget {
    const m = this.months.get(key(b.tenantId, b.kind, b.scopeId));
    return {
      kind: b.kind,
      scopeId: b.scopeId,
      monthlyCap: b.monthlyCap,
      spent: m?.spent ?? 0,
      reserved: m?.reserved ?? 0,
      month: new Date().toISOString().slice(0, 7),
      createdAt: b.createdAt,
      updatedAt: b.updatedAt,
    };
  }

  async list(tenantId: string, page: { limit: number; after?: BudgetPosition }): Promise<Budget[]> {
    return [...this.budgets.values()]
      .filter((b) => b.tenantId === tenantId && (!page.after || byPosition(position(b), page.after) > 0))
      .sort((a, b) => byPosition(position(a), position(b)))
      .slice(0, page.limit)
      .map((b) => this.view(b));
  }

  async get(tenantId: string, kind: BudgetKind, scopeId: string): Promise<Budget | null> {
    const b = this.budgets.get(key(tenantId, kind, scopeId));
    return b ? this.view(b) : null;
  }

  async set(_m: Tx, tenantId: string, kind: BudgetKind, scopeId: string, monthlyCap: number): Promise<Budget> {
    const k = key(tenantId, kind, scopeId);
    const at = this.stamp();
    const b = this.budgets.get(k) ?? { tenantId, kind, scopeId, monthlyCap, createdAt: at, updatedAt: at };
    Object.assign(b, { monthlyCap, updatedAt: at });
    this.budgets.set(k, b);
    if (!this.months.has(k)) {
      const mine = this.debits.filter((d) => d.tenantId === tenantId && (kind === 'client' ? d.clientId : d.productKey) === scopeId);
      this.months.set(k, { spent: mine.reduce((sum, d) => sum + d.debit, 0), reserved: 0 });
    }
    return this.view(b);
  }

  async remove(tenantId: string, kind: BudgetKind, scopeId: string): Promise<boolean> {
    return this.budgets.delete(key(tenantId, kind, scopeId));
  }

  /** What the gateway's statements leave in a budget's running month (they alone write it). */
  spend(tenantId: string, kind: BudgetKind, scopeId: string, figures: MonthFigures): void {
    this.months.set(key(tenantId, kind, scopeId), { ...figures });
  }

  /**
   * A request completed this month, debiting `debit`: on record for budgets set later, and spent
   * under the budgets covering it now (their month rows), as its reservation and settlement would.
   */
  debit(d: FakeDebit): void {
    this.debits.push({ ...d });
    for (const [kind, scopeId] of [['client', d.clientId], ['product', d.productKey]] as const) {
      const m = this.budgets.has(key(d.tenantId, kind, scopeId)) ? this.months.get(key(d.tenantId, kind, scopeId)) : undefined;
      if (m) m.spent += d.debit;
    }
  }

  /** The tenant's budgets (what the budgets-per-tenant quota counts). */
  count(tenantId: string): number {
    return [...this.budgets.values()].filter((b) => b.tenantId === tenantId).length;
  }
}
