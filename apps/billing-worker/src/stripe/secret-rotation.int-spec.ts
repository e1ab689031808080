import { Client } from 'pg';
import type Stripe from 'stripe';
import { SecretStore } from '@flagship/config';
import { createTestEnvironment, FakeSecretsManager, FakeStripe, waitFor, type TestEnvironment } from '@flagship/testing';
import { billingState, createPlans, createTenantWithCustomer, type Plans, startWorker, stripeEnv } from '../testing/billing-worker.fixture';

/**
 * Stripe secrets from AWS Secrets Manager (the fake, through the real AWS SDK), rotated while the
 * worker runs: the new webhook signing secret and the new API key are used after SECRETS_REFRESH_S,
 * without a restart; the previous signing secret is accepted while the rotation overlaps.
 */
describe('billing-worker: Stripe secret rotation without a restart', () => {
  let te: TestEnvironment;
  let sm: FakeSecretsManager;
  let fake: FakeStripe;
  let stripe: Stripe;
  let plans: Plans;
  let secrets: SecretStore;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let db: Client;
  const saved = { id: process.env['AWS_ACCESS_KEY_ID'], key: process.env['AWS_SECRET_ACCESS_KEY'] };
  let bundle: Record<string, string>;

  beforeAll(async () => {
    process.env['AWS_ACCESS_KEY_ID'] = 'AKIDEXAMPLE';
    process.env['AWS_SECRET_ACCESS_KEY'] = 'example';
    te = await createTestEnvironment();
    sm = await FakeSecretsManager.start();
    fake = await FakeStripe.start({ apiKey: 'sk_test_old', webhookSecret: 'whsec_old' });
    stripe = fake.client();
    plans = await createPlans(stripe);
    bundle = { STRIPE_SECRET_KEY: 'sk_test_old', STRIPE_WEBHOOK_SECRET: 'whsec_old', STRIPE_PRICE_FREE: plans.free.id, STRIPE_PRICE_STANDARD: plans.standard.id, STRIPE_PRICE_PREMIUM: plans.premium.id };
    sm.put('flagship/billing', bundle);
    const env: NodeJS.ProcessEnv = { ...te.env, ...stripeEnv(fake, plans), STRIPE_SECRET_KEY: '', STRIPE_WEBHOOK_SECRET: '', SECRETS_MANAGER_SECRET_ID: 'flagship/billing', SECRETS_REFRESH_S: '1', AWS_ENDPOINT_URL: sm.url };
    secrets = await SecretStore.create({ env: {}, secretId: 'flagship/billing', refreshSeconds: 1, endpoint: sm.url });
    worker = await startWorker(env, secrets);
    fake.webhookUrl = `${worker.url}/webhooks/stripe`;
    db = new Client({ connectionString: te.db.url });
    await db.connect();
  });

  afterAll(async () => {
    await fake?.settled();
    await worker?.close();
    secrets?.close();
    await fake?.close();
    await sm?.close();
    await db?.end();
    await te?.teardown();
    process.env['AWS_ACCESS_KEY_ID'] = saved.id;
    process.env['AWS_SECRET_ACCESS_KEY'] = saved.key;
    if (saved.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
    if (saved.key === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
  });

  async function subscribe(customerId: string, price: Stripe.Price): Promise<string> {
    const s = await stripe.checkout.sessions.create({ mode: 'subscription', customer: customerId, line_items: [{ price: price.id, quantity: 1 }], success_url: 'https://app.test/ok' });
    fake.completeCheckout(s.id);
    await fake.settled();
    return (await stripe.checkout.sessions.retrieve(s.id)).subscription as string;
  }

  it('a rotated webhook signing secret is accepted after the refresh, the previous one during the overlap, then not', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Rotating');
    await subscribe(customerId, plans.standard);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'standard');

    sm.put('flagship/billing', { ...bundle, STRIPE_WEBHOOK_SECRET: 'whsec_new', STRIPE_WEBHOOK_SECRET_PREVIOUS: 'whsec_old' });
    fake.webhookSecrets = ['whsec_new'];
    const newSigned = fake.deliveries.length;
    const subId = (await db.query(`SELECT stripe_subscription_id FROM billing_subscriptions WHERE tenant_id = $1`, [tenantId])).rows[0].stripe_subscription_id as string;
    await stripe.subscriptions.update(subId, { cancel_at_period_end: true });
    await fake.settled();
    const event = fake.events[fake.events.length - 1]['id'] as string;
    // Stripe retries a refused delivery; the retry after the refresh gets through.
    await waitFor(async () => {
      await fake.redeliver(event);
      return fake.deliveries[fake.deliveries.length - 1].status === 200;
    }, 5000, 300);
    expect(fake.deliveries.slice(newSigned).some((d) => d.status === 400)).toBe(true);
    await waitFor(async () => (await billingState(db, tenantId)).subscriptions[0].cancel_at_period_end === true);

    // During the overlap a delivery signed with the old secret is still accepted.
    fake.webhookSecrets = ['whsec_old'];
    await fake.redeliver(event);
    expect(fake.deliveries[fake.deliveries.length - 1].status).toBe(200);

    // The overlap ends: the old secret is refused.
    sm.put('flagship/billing', { ...bundle, STRIPE_WEBHOOK_SECRET: 'whsec_new' });
    await waitFor(async () => {
      await fake.redeliver(event);
      return fake.deliveries[fake.deliveries.length - 1].status === 400;
    }, 5000, 300);
    fake.webhookSecrets = ['whsec_new'];
    bundle = { ...bundle, STRIPE_WEBHOOK_SECRET: 'whsec_new' };
  });

  it('a rolled API key: Stripe refuses the old one, the worker holds its events, and uses the new key once Secrets Manager has it', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Rolled');
    fake.apiKeys.clear();
    fake.apiKeys.add('sk_test_new');
    stripe = fake.client('sk_test_new');
    await subscribe(customerId, plans.premium);
    await new Promise((r) => setTimeout(r, 600));
    // Stored (acknowledged) but not applied: re-reading the subscription needs the API.
    expect((await billingState(db, tenantId)).plan).toBe('free');
    expect(fake.requests.some((r) => r.status === 401)).toBe(true);
    sm.put('flagship/billing', { ...bundle, STRIPE_SECRET_KEY: 'sk_test_new' });
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'premium', 15000);
  });
});
