import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { CreditsRepository } from '@flagship/ledger';

/** A credit purchase and what has been taken back of it (table credit_purchases). */
export interface CreditPurchase {
  stripeSessionId: string;
  tenantId: string;
  productKey: string;
  stripePaymentIntentId: string | null;
  /** Paid, in the currency's smallest unit. */
  amount: number;
  currency: string;
  /** Micro-credits granted. */
  credits: number;
  amountRefunded: number;
  amountDisputed: number;
  creditsTakenBack: number;
  disputeOpen: boolean;
}

export type NewCreditPurchase = Pick<CreditPurchase, 'stripeSessionId' | 'tenantId' | 'productKey' | 'stripePaymentIntentId' | 'amount' | 'currency' | 'credits'>;

/** What a reversal leaves of a purchase, and the credits it moves (positive takes back). */
export interface ReversalUpdate {
  amountRefunded: number;
  amountDisputed: number;
  creditsTakenBack: number;
  disputeOpen: boolean;
  move: { credits: number; reason: string } | null;
}

/**
 * Credit purchases and their reversals. Every lock is held until the caller's transaction ends, so
 * two events of one charge on two replicas apply one after the other. Credits move through the
 * ledger's CreditsRepository (the one owner of balances), in the same transaction.
 */
export abstract class CreditPurchasesRepository {
  /** Records a purchase once (a second call for the session changes nothing). */
  abstract record(m: EntityManager, purchase: NewCreditPurchase): Promise<void>;
  abstract lockByPaymentIntent(m: EntityManager, paymentIntentId: string): Promise<CreditPurchase | null>;
  /** By its Checkout Session (a purchase recorded before payment intents were kept), naming its payment intent from now on. */
  abstract lockBySessionAndAttach(m: EntityManager, stripeSessionId: string, paymentIntentId: string): Promise<CreditPurchase | null>;
  abstract applyReversal(m: EntityManager, purchase: CreditPurchase, update: ReversalUpdate): Promise<void>;
}

const COLUMNS = `stripe_session_id, tenant_id, product_key, stripe_payment_intent_id, amount::text AS amount, currency, credits::text AS credits,
  amount_refunded::text AS amount_refunded, amount_disputed::text AS amount_disputed, credits_taken_back::text AS credits_taken_back, dispute_open`;

@Injectable()
export class SqlCreditPurchasesRepository extends CreditPurchasesRepository {
  constructor(private readonly credits: CreditsRepository) {
    super();
  }

  async record(m: EntityManager, p: NewCreditPurchase): Promise<void> {
    await m.query(
      `INSERT INTO credit_purchases (stripe_session_id, tenant_id, product_key, stripe_payment_intent_id, amount, currency, credits)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (stripe_session_id) DO NOTHING`,
      [p.stripeSessionId, p.tenantId, p.productKey, p.stripePaymentIntentId, p.amount, p.currency, p.credits],
    );
  }

  async lockByPaymentIntent(m: EntityManager, paymentIntentId: string): Promise<CreditPurchase | null> {
    const rows: Array<Record<string, unknown>> = await m.query(`SELECT ${COLUMNS} FROM credit_purchases WHERE stripe_payment_intent_id = $1 FOR UPDATE`, [paymentIntentId]);
    return rows[0] ? toPurchase(rows[0]) : null;
  }

  async lockBySessionAndAttach(m: EntityManager, stripeSessionId: string, paymentIntentId: string): Promise<CreditPurchase | null> {
    const rows: Array<Record<string, unknown>> = await m.query(
      `UPDATE credit_purchases SET stripe_payment_intent_id = $2, updated_at = now()
       WHERE stripe_session_id = $1 AND (stripe_payment_intent_id IS NULL OR stripe_payment_intent_id = $2)
       RETURNING ${COLUMNS}`,
      [stripeSessionId, paymentIntentId],
    );
    // TypeORM answers an UPDATE ... RETURNING with [rows, affected].
    const returned = (rows as unknown as [Array<Record<string, unknown>>, number])[0];
    return returned[0] ? toPurchase(returned[0]) : null;
  }

  async applyReversal(m: EntityManager, p: CreditPurchase, u: ReversalUpdate): Promise<void> {
    await m.query(
      `UPDATE credit_purchases SET amount_refunded = $3, amount_disputed = $4, credits_taken_back = $5, dispute_open = $6, updated_at = now()
       WHERE tenant_id = $1 AND stripe_session_id = $2`,
      [p.tenantId, p.stripeSessionId, u.amountRefunded, u.amountDisputed, u.creditsTakenBack, u.disputeOpen],
    );
    // A negative grant takes back; the balance may go below zero (the credits may be spent already).
    if (u.move) await this.credits.grantCredits(m, p.tenantId, { amount: -u.move.credits, reason: u.move.reason, grantedBy: 'stripe' });
  }
}

function toPurchase(r: Record<string, unknown>): CreditPurchase {
  return {
    stripeSessionId: r['stripe_session_id'] as string,
    tenantId: r['tenant_id'] as string,
    productKey: r['product_key'] as string,
    stripePaymentIntentId: (r['stripe_payment_intent_id'] as string | null) ?? null,
    amount: Number(r['amount']),
    currency: r['currency'] as string,
    credits: Number(r['credits']),
    amountRefunded: Number(r['amount_refunded']),
    amountDisputed: Number(r['amount_disputed']),
    creditsTakenBack: Number(r['credits_taken_back']),
    disputeOpen: r['dispute_open'] as boolean,
  };
}
