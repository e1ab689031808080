import { Injectable, Logger } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';
import { reversalOf } from './credit-reversal';
import { CreditPurchasesRepository, type NewCreditPurchase } from './credit-purchases.repository';

/** A charge as billing-worker last read it from Stripe, with the disputes Stripe lists for it. */
export interface ChargeFacts {
  chargeId: string;
  paymentIntentId: string | null;
  /** The tenant whose Stripe customer the charge names (our own mapping), or null. */
  customerTenantId: string | null;
  /** Stripe's `amount_refunded`, cumulative. */
  amountRefunded: number;
  disputes: ReadonlyArray<{ id: string; amount: number; status: string }>;
}

/**
 * Refunds and disputes of credit purchases (charge.refunded, refund.*, charge.dispute.*): each event
 * is a pointer to a charge, which the caller re-reads from Stripe; this keeps the purchase's credits
 * taken back equal to what reversalOf says of the charge as it is now, moving only the difference.
 * So a redelivered event, a second event for the same change, or events out of order move nothing
 * twice, and a dispute won gives back what it took. While a dispute is open the purchase says so,
 * and the AI gateway refuses the tenant (account_paused).
 */
@Injectable()
export class CreditReversalsService {
  private readonly log = new Logger(CreditReversalsService.name);

  constructor(private readonly purchases: CreditPurchasesRepository) {}

  /** Records a purchase whose credits were just granted, so its refunds and disputes can find it. */
  purchased(m: Tx, purchase: NewCreditPurchase): Promise<void> {
    return this.purchases.record(m, purchase);
  }

  /**
   * Applies the charge as it is now to its credit purchase; answers the tenants whose credits or
   * pause changed. `sessionOf` asks Stripe for the Checkout Session of a payment intent, for a
   * purchase recorded before payment intents were kept.
   */
  async chargeChanged(m: Tx, charge: ChargeFacts, sessionOf: (paymentIntentId: string) => Promise<string | null>): Promise<string[]> {
    const pi = charge.paymentIntentId;
    if (!pi) return [];
    let purchase = await this.purchases.lockByPaymentIntent(m, pi);
    if (!purchase) {
      const sessionId = await sessionOf(pi);
      purchase = sessionId ? await this.purchases.lockBySessionAndAttach(m, sessionId, pi) : null;
    }
    // A refund of a plan invoice, or a payment made elsewhere: not a credit purchase of ours.
    if (!purchase) return [];
    if (charge.customerTenantId !== purchase.tenantId) {
      this.log.warn(`charge ${charge.chargeId}: its customer is not the purchase's tenant ${purchase.tenantId}; nothing taken back`);
      return [];
    }
    const r = reversalOf(purchase, charge);
    const unchanged =
      r.change === 0 && r.disputeOpen === purchase.disputeOpen && r.amountRefunded === purchase.amountRefunded && r.amountDisputed === purchase.amountDisputed;
    if (unchanged) return [];
    const taken = Math.min(purchase.amount, r.amountRefunded + r.amountDisputed);
    await this.purchases.applyReversal(m, purchase, {
      amountRefunded: r.amountRefunded,
      amountDisputed: r.amountDisputed,
      creditsTakenBack: r.creditsTakenBack,
      disputeOpen: r.disputeOpen,
      move:
        r.change === 0
          ? null
          : { credits: r.change, reason: `stripe charge ${charge.chargeId}: ${taken} of ${purchase.amount} ${purchase.currency} refunded or disputed (checkout ${purchase.stripeSessionId})` },
    });
    if (r.disputeOpen !== purchase.disputeOpen) {
      const state = r.disputeOpen ? 'a dispute is open (the AI gateway refuses the tenant while one is)' : 'no dispute is open any more';
      this.log.log(`tenant ${purchase.tenantId}, charge ${charge.chargeId}: ${state}`);
    }
    return [purchase.tenantId];
  }
}
