import { type CreditBalance, CreditBalances, type CreditGrant } from '@flagship/ledger';
import type { Tx } from '@flagship/persistence';

/**
 * In-memory twin of CreditsRepository for service unit tests: same contract, no I/O. A tenant has a
 * balance from its first grant on (none before); `hold` is what the gateway reserves for requests in
 * flight. A grant tells those listening (`whenGranted`): the low-balance twin re-arms there, as the
 * real grant's statement does.
 */
export class FakeCreditBalances extends CreditBalances {
  readonly balances = new Map<string, CreditBalance>();
  readonly grants: Array<CreditGrant & { tenantId: string }> = [];
  private readonly listeners: Array<(tenantId: string, balance: number) => void> = [];

  async balanceOf(tenantId: string): Promise<CreditBalance | null> {
    const b = this.balances.get(tenantId);
    return b ? { ...b } : null;
  }

  async grantCredits(_m: Tx, tenantId: string, grant: CreditGrant): Promise<CreditBalance> {
    this.grants.push({ tenantId, ...grant });
    const b = this.balances.get(tenantId) ?? { balance: 0, reserved: 0 };
    b.balance += grant.amount;
    this.balances.set(tenantId, b);
    for (const listener of this.listeners) listener(tenantId, b.balance);
    return { ...b };
  }

  whenGranted(listener: (tenantId: string, balance: number) => void): void {
    this.listeners.push(listener);
  }

  /** What the gateway holds on the balance for requests in flight (the tenant has a balance already). */
  hold(tenantId: string, reserved: number): void {
    const b = this.balances.get(tenantId);
    if (!b) throw new Error(`${tenantId} has no balance to hold on`);
    b.reserved = reserved;
  }
}
