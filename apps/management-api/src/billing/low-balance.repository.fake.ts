import { randomUUID } from 'node:crypto';
import { type LowBalanceAlert, LowBalanceAlerts, type LowBalanceCrossing } from '@flagship/ledger';
import { FakeCreditBalances } from './credits.repository.fake';

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
/** A crossing's keyset position, as the cursor names it. */
type Position = { at: string; id: string };
const positionOf = (c: LowBalanceCrossing): Position => ({ at: c.crossedAt, id: c.id });
/** Newest first: crossed, then id (uuids compare as their lower-case text does in Postgres). */
const newestFirst = (a: Position, b: Position): number => compare(b.at, a.at) || compare(b.id, a.id);

/**
 * In-memory twin of LowBalanceRepository for service unit tests: same contract, no I/O. It reads the
 * balances of the credits twin it is given (arming follows them) and re-arms on its grants, as the
 * real statements do; `settle` is what the gateway's settlement does to both. Each write moves the
 * clock on by at least 1 ms, so crossings keep the order they happened in.
 */
export class FakeLowBalanceAlerts extends LowBalanceAlerts {
  readonly alerts = new Map<string, LowBalanceAlert>();
  readonly recorded: LowBalanceCrossing[] = [];
  private clock = 0;

  constructor(readonly credits = new FakeCreditBalances()) {
    super();
    credits.whenGranted((tenantId, balance) => {
      const a = this.alerts.get(tenantId);
      if (a && !a.armed && balance > a.threshold) Object.assign(a, { armed: true, updatedAt: this.stamp() });
    });
  }

  private stamp(): string {
    this.clock = Math.max(this.clock + 1, Date.now());
    return new Date(this.clock).toISOString();
  }

  async get(tenantId: string): Promise<LowBalanceAlert | null> {
    const a = this.alerts.get(tenantId);
    return a ? { ...a } : null;
  }

  async set(tenantId: string, threshold: number): Promise<LowBalanceAlert> {
    const balance = this.credits.balances.get(tenantId)?.balance ?? 0;
    const a = { threshold, armed: balance > threshold, updatedAt: this.stamp() };
    this.alerts.set(tenantId, a);
    return { ...a };
  }

  async remove(tenantId: string): Promise<boolean> {
    return this.alerts.delete(tenantId);
  }

  async crossings(tenantId: string, page: { limit: number; after?: Position }): Promise<LowBalanceCrossing[]> {
    return this.recorded
      .filter((c) => c.tenantId === tenantId && (!page.after || newestFirst(positionOf(c), page.after) > 0))
      .sort((a, b) => newestFirst(positionOf(a), positionOf(b)))
      .slice(0, page.limit)
      .map((c) => ({ ...c }));
  }

  /**
   * A settlement debiting `debit` from the tenant's balance (it has one): an armed alert whose
   * threshold the new balance is at or below records one crossing and is disarmed until a grant.
   */
  settle(tenantId: string, debit: number): void {
    const b = this.credits.balances.get(tenantId);
    if (!b) throw new Error(`${tenantId} has no balance to debit`);
    b.balance -= debit;
    const a = this.alerts.get(tenantId);
    if (!a?.armed || b.balance > a.threshold) return;
    const crossedAt = this.stamp();
    Object.assign(a, { armed: false, updatedAt: crossedAt });
    this.recorded.push({ id: randomUUID(), tenantId, threshold: a.threshold, balance: b.balance, crossedAt });
  }
}
