import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Billing (CONTRACT.md section 8): Stripe customers per tenant and product key, plan subscriptions
 * as last read from Stripe, the webhook inbox (one row per Stripe event id, so a redelivery is
 * processed once), the billing ledger (invoices and credit purchases, once per Stripe object), and
 * billing-worker's small state (portal configuration id, event catch-up watermark).
 */
export class Billing1763800300000 implements MigrationInterface {
  name = 'Billing1763800300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE billing_customers (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        stripe_customer_id text NOT NULL UNIQUE,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, product_key)
      )`);
    await q.query(`
      CREATE TABLE billing_subscriptions (
        stripe_subscription_id text PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        stripe_customer_id text NOT NULL,
        -- The plan subscription has exactly one item (the portal's subscription_update_confirm flow needs it).
        stripe_item_id text,
        price_id text,
        plan text CHECK (plan IN ('free', 'standard', 'premium')),
        status text NOT NULL,
        current_period_start timestamptz(3),
        current_period_end timestamptz(3),
        cancel_at_period_end boolean NOT NULL DEFAULT false,
        stripe_created bigint NOT NULL,
        synced_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX billing_subscriptions_tenant_idx ON billing_subscriptions (tenant_id, product_key, stripe_created DESC)`);
    await q.query(`
      CREATE TABLE stripe_events (
        id text PRIMARY KEY,
        type text NOT NULL,
        stripe_created bigint NOT NULL,
        payload jsonb NOT NULL,
        source text NOT NULL DEFAULT 'webhook' CHECK (source IN ('webhook', 'catch_up')),
        received_at timestamptz(3) NOT NULL DEFAULT now(),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz(3) NOT NULL DEFAULT now(),
        last_error text,
        processed_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX stripe_events_inbox_idx ON stripe_events (next_attempt_at, stripe_created) WHERE processed_at IS NULL`);
    await q.query(`
      CREATE TABLE billing_ledger (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('invoice_paid', 'invoice_payment_failed', 'credit_purchase')),
        stripe_object_id text NOT NULL,
        stripe_subscription_id text,
        -- Money in the currency's smallest unit; credits in micro-credits (credit purchases only).
        amount bigint NOT NULL,
        currency text NOT NULL,
        credits bigint NOT NULL DEFAULT 0,
        occurred_at timestamptz(3) NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        UNIQUE (kind, stripe_object_id)
      )`);
    await q.query(`CREATE INDEX billing_ledger_tenant_idx ON billing_ledger (tenant_id, product_key, occurred_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE billing_state (
        key text PRIMARY KEY,
        value text NOT NULL,
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['billing_state', 'billing_ledger', 'stripe_events', 'billing_subscriptions', 'billing_customers']) await q.query(`DROP TABLE ${t}`);
  }
}
