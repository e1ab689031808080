import { randomUUID } from 'node:crypto';
import type { LowBalanceCrossing } from '../low-balance.repository';
import { type CappedOutcome, type LedgerRowRef, type Reservation, type ReserveOutcome, type Settlement, UsageLedger } from '../usage-ledger';

/** A row as the fake keeps it: the reservation it was made from and what became of it. */
export interface FakeLedgerRow {
  reservation: Reservation;
  status: 'pending' | 'succeeded' | 'failed';
  upstreamCalled: boolean;
  /** Micro-credits held while pending (0 when zero-rated), as the row's `reserved`. */
  reserved: number;
  debit: number;
  overrun: boolean;
  settlement?: Settlement;
  clientBudgetHeld: boolean;
  productBudgetHeld: boolean;
}

/** A budget of this month: its limit, what settled rows spent, what pending rows hold. */
export interface FakeBudget {
  limit: number;
  spent: number;
  reserved: number;
}

type Method = 'admit' | 'admitUnderCap' | 'settleBatch' | 'release' | 'markUpstreamCalled' | 'flushBarrier';

/**
 * In-memory twin of UsageLedgerRepository (usage-ledger.agreement.int-spec.ts holds both to the same
 * cases): a tenant's balance and reserved credit, budgets per OAuth client and product key, rows pending
 * until settled or released, low-balance thresholds crossed by a settlement. Admission as the SQL
 * decides it: zero-rated always; else the credit left (balance - reserved) must cover the estimate (at
 * least 1), then the client's and the product's budgets (limit - spent - reserved). A row no longer
 * pending is left alone by settle and release (false). One corner differs: in a batch the credit or a
 * budget cannot wholly cover, Postgres may also count a refused request's estimate against those after
 * it (refusing more, never admitting more); the fake decides each on what was admitted before it.
 * `failNext` makes the next calls of a method throw, as an unreachable Postgres does; `calls` lists
 * each call and its batch size.
 */
export class FakeUsageLedgerRepository extends UsageLedger {
  readonly balances = new Map<string, { balance: number; reserved: number }>();
  /** Keyed by budgetKey(). */
  readonly budgets = new Map<string, FakeBudget>();
  /** Armed low-balance alerts: tenant id -> threshold (disarmed when crossed, as low_balance_alerts). */
  readonly alerts = new Map<string, number>();
  readonly rows = new Map<string, FakeLedgerRow>();
  readonly calls: Array<{ method: Method; size: number }> = [];
  /** Outcomes admit() answers next, before it decides (the repository's `unavailable` has no other way here). */
  readonly scripted: ReserveOutcome[] = [];
  private readonly failing = new Map<Method, { times: number; error: Error }>();

  static budgetKey(tenantId: string, kind: 'client' | 'product', scope: string): string {
    return `${tenantId} ${kind} ${scope}`;
  }

  /** A tenant with `balance` micro-credits, nothing reserved. */
  tenant(tenantId: string, balance: number): this {
    this.balances.set(tenantId, { balance, reserved: 0 });
    return this;
  }

  budget(tenantId: string, kind: 'client' | 'product', scope: string, limit: number): this {
    this.budgets.set(FakeUsageLedgerRepository.budgetKey(tenantId, kind, scope), { limit, spent: 0, reserved: 0 });
    return this;
  }

  failNext(method: Method, times = 1, error = new Error('connect ECONNREFUSED 127.0.0.1:5432')): this {
    this.failing.set(method, { times, error });
    return this;
  }

  private enter(method: Method, size: number): void {
    this.calls.push({ method, size });
    const f = this.failing.get(method);
    if (f === undefined || f.times <= 0) return;
    f.times--;
    throw f.error;
  }

  private budgetOf(r: Reservation, kind: 'client' | 'product'): FakeBudget | undefined {
    return this.budgets.get(FakeUsageLedgerRepository.budgetKey(r.tenantId, kind, kind === 'client' ? r.clientId : r.productKey));
  }

  async admit(batch: readonly Reservation[]): Promise<ReserveOutcome[]> {
    this.enter('admit', batch.length);
    return batch.map((r) => {
      const outcome = this.scripted.shift() ?? this.decide(r);
      if (outcome === 'admitted') this.hold(r);
      return outcome;
    });
  }

  /** As the SQL: this month's rows of the variation on the product key, pending ones at their hold, completed ones at their debit. */
  async admitUnderCap(r: Reservation, monthlyCap: number): Promise<CappedOutcome> {
    const route = r.route;
    if (r.zeroRatedReason !== null || route?.variation === undefined || route.variation === null) return (await this.admit([r]))[0]!;
    this.enter('admitUnderCap', 1);
    let used = 0;
    for (const row of this.rows.values()) {
      const o = row.reservation;
      if (o.tenantId !== r.tenantId || o.productKey !== r.productKey || o.route?.flagKey !== route.flagKey || o.route?.variation !== route.variation) continue;
      used += row.status === 'pending' ? row.reserved : row.debit;
    }
    if (used + Math.max(r.estimate, 1) > monthlyCap) return 'spend_cap';
    const outcome = this.scripted.shift() ?? this.decide(r);
    if (outcome === 'admitted') this.hold(r);
    return outcome;
  }

  private decide(r: Reservation): ReserveOutcome {
    if (r.zeroRatedReason !== null) return 'admitted';
    const b = this.balances.get(r.tenantId);
    const needed = Math.max(r.estimate, 1);
    if (b === undefined || b.balance - b.reserved < needed) return 'insufficient_credits';
    const left = (budget: FakeBudget | undefined): number => (budget === undefined ? Infinity : budget.limit - budget.spent - budget.reserved);
    if (left(this.budgetOf(r, 'client')) < needed) return 'budget_client';
    if (left(this.budgetOf(r, 'product')) < needed) return 'budget_product';
    return 'admitted';
  }

  private hold(r: Reservation): void {
    const billable = r.zeroRatedReason === null;
    const reserved = billable ? r.estimate : 0;
    const client = billable ? this.budgetOf(r, 'client') : undefined;
    const product = billable ? this.budgetOf(r, 'product') : undefined;
    if (billable) this.balances.get(r.tenantId)!.reserved += reserved;
    if (client !== undefined) client.reserved += reserved;
    if (product !== undefined) product.reserved += reserved;
    this.rows.set(r.id, { reservation: r, status: 'pending', upstreamCalled: false, reserved, debit: 0, overrun: false, clientBudgetHeld: client !== undefined, productBudgetHeld: product !== undefined });
  }

  /** Gives a completed or deleted row's hold back, and charges `debit`. */
  private move(row: FakeLedgerRow, debit: number): void {
    const r = row.reservation;
    const b = this.balances.get(r.tenantId);
    if (b !== undefined) {
      b.reserved -= row.reserved;
      b.balance -= debit;
    }
    for (const [held, kind] of [
      [row.clientBudgetHeld, 'client'],
      [row.productBudgetHeld, 'product'],
    ] as const) {
      const budget = held ? this.budgetOf(r, kind) : undefined;
      if (budget === undefined) continue;
      budget.reserved -= row.reserved;
      budget.spent += debit;
    }
  }

  private pending(item: LedgerRowRef): FakeLedgerRow | undefined {
    const row = this.rows.get(item.id);
    return row !== undefined && row.reservation.tenantId === item.tenantId && row.status === 'pending' ? row : undefined;
  }

  async release(batch: readonly LedgerRowRef[]): Promise<boolean[]> {
    this.enter('release', batch.length);
    return batch.map((item) => {
      const row = this.pending(item);
      if (row === undefined) return false;
      this.move(row, 0);
      this.rows.delete(item.id);
      return true;
    });
  }

  async markUpstreamCalled(batch: readonly LedgerRowRef[]): Promise<void> {
    this.enter('markUpstreamCalled', batch.length);
    for (const item of batch) {
      const row = this.pending(item);
      if (row !== undefined) row.upstreamCalled = true;
    }
  }

  async settleBatch(batch: readonly Settlement[]): Promise<{ completed: boolean[]; crossings: LowBalanceCrossing[] }> {
    this.enter('settleBatch', batch.length);
    const moved = new Set<string>();
    const completed = batch.map((s) => {
      const row = this.pending(s);
      if (row === undefined) return false;
      const zeroRated = row.reservation.zeroRatedReason !== null;
      row.status = s.status;
      row.debit = zeroRated ? 0 : s.debit;
      row.overrun = !zeroRated && s.debit > row.reserved;
      row.settlement = s;
      this.move(row, row.debit);
      // As SETTLE's moved_balances: only a balance that moved is checked against its alert.
      if (row.reserved > 0 || row.debit > 0) moved.add(s.tenantId);
      return true;
    });
    const crossings: LowBalanceCrossing[] = [];
    for (const tenantId of moved) {
      const threshold = this.alerts.get(tenantId);
      const balance = this.balances.get(tenantId)?.balance;
      if (threshold === undefined || balance === undefined || balance > threshold) continue;
      this.alerts.delete(tenantId);
      crossings.push({ id: randomUUID(), tenantId, threshold, balance, crossedAt: new Date(0).toISOString() });
    }
    return { completed, crossings };
  }

  async flushBarrier(): Promise<void> {
    this.enter('flushBarrier', 0);
  }
}
