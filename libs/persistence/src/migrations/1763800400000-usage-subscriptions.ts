import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each tenant's Stripe customer (per product key) gets its own usage subscription on the metered
 * price, apart from its single-item plan subscription; billing-worker records it here so the meter
 * reporter finds it without asking Stripe, and clears it when Stripe ends that subscription.
 */
export class UsageSubscriptions1763800400000 implements MigrationInterface {
  name = 'UsageSubscriptions1763800400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE billing_customers ADD COLUMN usage_subscription_id text UNIQUE`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE billing_customers DROP COLUMN usage_subscription_id`);
  }
}
