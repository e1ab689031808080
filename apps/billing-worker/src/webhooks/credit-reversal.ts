/**
 * What Stripe has taken back of one credit purchase, and so how many of its credits the tenant may
 * keep: the money arithmetic of refunds and disputes, pure.
 *
 * - Money taken back = Stripe's cumulative `amount_refunded` of the charge plus the amount of each
 *   dispute that holds money (open, inquiries included, or lost), never more than was paid.
 * - Credits taken back = that share of the credits granted, rounded down: in the tenant's favour by
 *   less than one micro-credit, and a full refund takes back exactly what was granted.
 * - The change to apply is the difference from what was taken back before, so a second refund
 *   event (amount_refunded is cumulative), a redelivery, or two events read after the same change
 *   move nothing twice; a dispute won (or an inquiry closed) gives its share back.
 * - A dispute is open until won, lost, closed as an inquiry, or prevented; while one is, the tenant's
 *   gateway access is paused.
 */

/** Dispute statuses after which Stripe's dispute is over. */
const CLOSED = new Set(['won', 'lost', 'warning_closed', 'prevented']);
/** Closed statuses in which the money stayed with us. */
const KEPT = new Set(['won', 'warning_closed', 'prevented']);

export interface PurchaseState {
  /** Paid, in the currency's smallest unit. */
  amount: number;
  /** Micro-credits granted for it. */
  credits: number;
  /** Micro-credits taken back so far. */
  creditsTakenBack: number;
}

/** The charge as Stripe has it now. */
export interface ChargeState {
  /** Stripe's `amount_refunded`: every refund of the charge so far, cumulative. */
  amountRefunded: number;
  disputes: ReadonlyArray<{ amount: number; status: string }>;
}

export interface Reversal {
  amountRefunded: number;
  /** Held by open or lost disputes. */
  amountDisputed: number;
  /** Micro-credits that should be taken back in all. */
  creditsTakenBack: number;
  /** creditsTakenBack minus what was taken before: positive takes back, negative gives back. */
  change: number;
  disputeOpen: boolean;
}

const whole = (n: number): number => (Number.isSafeInteger(n) && n > 0 ? n : 0);

export function isDisputeOpen(status: string): boolean {
  return !CLOSED.has(status);
}

export function reversalOf(purchase: PurchaseState, charge: ChargeState): Reversal {
  const amountRefunded = whole(charge.amountRefunded);
  const amountDisputed = charge.disputes.filter((d) => !KEPT.has(d.status)).reduce((sum, d) => sum + whole(d.amount), 0);
  const paid = whole(purchase.amount);
  const credits = whole(purchase.credits);
  const takenMoney = Math.min(paid, amountRefunded + amountDisputed);
  // BigInt: credits (up to 10^14) times cents (up to 10^8) is past 2^53.
  const creditsTakenBack = paid === 0 ? 0 : Number((BigInt(credits) * BigInt(takenMoney)) / BigInt(paid));
  return {
    amountRefunded,
    amountDisputed,
    creditsTakenBack,
    change: creditsTakenBack - purchase.creditsTakenBack,
    disputeOpen: charge.disputes.some((d) => isDisputeOpen(d.status)),
  };
}
