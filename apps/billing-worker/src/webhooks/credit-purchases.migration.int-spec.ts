import type { MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const CreditPurchases = MIGRATIONS.find((m) => m.name === 'CreditPurchases1763860520000')! as new () => MigrationInterface;

/** The credit-purchases migration on purchases granted before it: each billing_ledger credit purchase becomes one, nothing taken back, its payment intent unknown. */
describe('the credit-purchases migration (CreditPurchases1763860520000) on existing data (real Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('copies every credit purchase of billing_ledger, and nothing else', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const migration = new CreditPurchases();
      await migration.down(runner);
      const [{ id: tenantId }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
      await runner.query(
        `INSERT INTO billing_ledger (tenant_id, product_key, kind, stripe_object_id, amount, currency, credits, occurred_at)
         VALUES ($1, 'core', 'credit_purchase', 'cs_old', 2500, 'usd', 25000000, now()), ($1, 'core', 'invoice_paid', 'in_1', 4900, 'usd', 0, now())`,
        [tenantId],
      );

      await migration.up(runner);

      expect(await runner.query(`SELECT stripe_session_id, tenant_id, stripe_payment_intent_id, amount::int, credits::bigint::text AS credits, credits_taken_back::int, dispute_open FROM credit_purchases`)).toEqual([
        { stripe_session_id: 'cs_old', tenant_id: tenantId, stripe_payment_intent_id: null, amount: 2500, credits: '25000000', credits_taken_back: 0, dispute_open: false },
      ]);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
