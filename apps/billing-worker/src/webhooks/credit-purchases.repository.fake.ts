import type { Tx } from '@flagship/persistence';
import { type CreditPurchase, CreditPurchasesRepository, type NewCreditPurchase, type ReversalUpdate } from './credit-purchases.repository';

/**
 * In-memory twin of SqlCreditPurchasesRepository for service unit tests: purchases by session id,
 * and the tenants' balances the ledger would hold (`balances`, `grants`), which may go negative.
 */
export class FakeCreditPurchasesRepository extends CreditPurchasesRepository {
  readonly purchases = new Map<string, CreditPurchase>();
  readonly balances = new Map<string, number>();
  readonly grants: Array<{ tenantId: string; amount: number; reason: string }> = [];

  /** A purchase as billing-worker records it when it grants its credits (the balance rises with it). */
  seed(p: NewCreditPurchase): CreditPurchase {
    const row: CreditPurchase = { ...p, amountRefunded: 0, amountDisputed: 0, creditsTakenBack: 0, disputeOpen: false };
    this.purchases.set(p.stripeSessionId, row);
    this.balances.set(p.tenantId, (this.balances.get(p.tenantId) ?? 0) + p.credits);
    return { ...row };
  }

  async record(_m: Tx, p: NewCreditPurchase): Promise<void> {
    if (!this.purchases.has(p.stripeSessionId)) this.purchases.set(p.stripeSessionId, { ...p, amountRefunded: 0, amountDisputed: 0, creditsTakenBack: 0, disputeOpen: false });
  }

  async lockByPaymentIntent(_m: Tx, paymentIntentId: string): Promise<CreditPurchase | null> {
    const p = [...this.purchases.values()].find((x) => x.stripePaymentIntentId === paymentIntentId);
    return p ? { ...p } : null;
  }

  async lockBySessionAndAttach(_m: Tx, stripeSessionId: string, paymentIntentId: string): Promise<CreditPurchase | null> {
    const p = this.purchases.get(stripeSessionId);
    if (!p || (p.stripePaymentIntentId !== null && p.stripePaymentIntentId !== paymentIntentId)) return null;
    p.stripePaymentIntentId = paymentIntentId;
    return { ...p };
  }

  async applyReversal(_m: Tx, p: CreditPurchase, u: ReversalUpdate): Promise<void> {
    const row = this.purchases.get(p.stripeSessionId);
    if (!row || row.tenantId !== p.tenantId) throw new Error(`no purchase ${p.stripeSessionId} of ${p.tenantId}`);
    Object.assign(row, { amountRefunded: u.amountRefunded, amountDisputed: u.amountDisputed, creditsTakenBack: u.creditsTakenBack, disputeOpen: u.disputeOpen });
    if (u.move) {
      this.grants.push({ tenantId: p.tenantId, amount: -u.move.credits, reason: u.move.reason });
      this.balances.set(p.tenantId, (this.balances.get(p.tenantId) ?? 0) - u.move.credits);
    }
  }
}
