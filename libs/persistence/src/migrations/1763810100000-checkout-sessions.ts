import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The Stripe Checkout Sessions management-api created, with what each may grant. billing-worker
 * credits a completed session only when it is recorded here for the tenant, re-read from Stripe as
 * paid, and never more than `amount`: a signed event naming a session nobody here created mints nothing.
 */
export class CheckoutSessions1763810100000 implements MigrationInterface {
  name = 'CheckoutSessions1763810100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE checkout_sessions (
        stripe_session_id text PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('credits', 'subscription')),
        -- What the session was created for, in the currency's smallest unit: the most it may credit.
        amount bigint CHECK (amount IS NULL OR amount >= 0),
        currency text,
        plan_id text,
        created_by uuid REFERENCES users(id) ON DELETE SET NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        CHECK (kind <> 'credits' OR (amount IS NOT NULL AND currency IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX checkout_sessions_tenant_idx ON checkout_sessions (tenant_id, created_at DESC)`);
    // Sessions created before this could not be recorded; one still open (up to a day) is judged by Stripe alone.
    await q.query(
      `INSERT INTO billing_state (key, value) VALUES ('checkout_sessions_recorded_since', floor(extract(epoch FROM now()))::bigint::text) ON CONFLICT (key) DO NOTHING`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM billing_state WHERE key = 'checkout_sessions_recorded_since'`);
    await q.query(`DROP TABLE checkout_sessions`);
  }
}
