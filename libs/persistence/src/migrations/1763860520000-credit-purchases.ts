import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each credit purchase with what Stripe has since taken back of it: refunds (Stripe's cumulative
 * `amount_refunded` of the charge) and disputes. billing-worker keeps `credits_taken_back` equal to
 * the share of the purchase's credits that the money taken back stands for, moving the difference
 * through credit_grants (a negative grant takes back; the balance may go negative), and
 * `dispute_open` true while a dispute of the charge is open (the AI gateway refuses the tenant then).
 *
 * Backfill: every purchase billing_ledger recorded. Their payment intents were not kept; billing-worker
 * finds one through Stripe (the Checkout Session of the payment intent) the first time it is refunded.
 */
export class CreditPurchases1763860520000 implements MigrationInterface {
  name = 'CreditPurchases1763860520000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE credit_purchases (
        stripe_session_id text PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        stripe_payment_intent_id text UNIQUE,
        -- What was paid, in the currency's smallest unit, and the micro-credits granted for it.
        amount bigint NOT NULL CHECK (amount >= 0),
        currency text NOT NULL,
        credits bigint NOT NULL CHECK (credits >= 0),
        -- As last applied: Stripe's amount_refunded, the amount held by open or lost disputes.
        amount_refunded bigint NOT NULL DEFAULT 0 CHECK (amount_refunded >= 0),
        amount_disputed bigint NOT NULL DEFAULT 0 CHECK (amount_disputed >= 0),
        credits_taken_back bigint NOT NULL DEFAULT 0 CHECK (credits_taken_back BETWEEN 0 AND credits),
        dispute_open boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX credit_purchases_disputed_idx ON credit_purchases (tenant_id) WHERE dispute_open`);
    await q.query(`
      INSERT INTO credit_purchases (stripe_session_id, tenant_id, product_key, amount, currency, credits, created_at)
      SELECT stripe_object_id, tenant_id, product_key, amount, currency, credits, occurred_at
      FROM billing_ledger WHERE kind = 'credit_purchase'
      ON CONFLICT (stripe_session_id) DO NOTHING`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE credit_purchases`);
  }
}
