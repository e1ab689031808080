import type Stripe from 'stripe';
import { SecretStore } from '@flagship/config';
import { FakeSecretsManager, FakeStripe, waitFor } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/** management-api reads the Stripe key and price ids from Secrets Manager at each use: a rotation needs no restart. */
describe('management-api billing: Stripe secrets rotated in Secrets Manager', () => {
  let sm: FakeSecretsManager;
  let fake: FakeStripe;
  let stripe: Stripe;
  let secrets: SecretStore;
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let bundle: Record<string, string>;
  const saved = { id: process.env['AWS_ACCESS_KEY_ID'], key: process.env['AWS_SECRET_ACCESS_KEY'] };
  const body = { type: 'subscription', planId: 'premium', successUrl: 'http://localhost:5173/ok', cancelUrl: 'http://localhost:5173/billing' };

  beforeAll(async () => {
    process.env['AWS_ACCESS_KEY_ID'] = 'AKIDEXAMPLE';
    process.env['AWS_SECRET_ACCESS_KEY'] = 'example';
    sm = await FakeSecretsManager.start();
    fake = await FakeStripe.start({ apiKey: 'sk_test_old' });
    stripe = fake.client();
    const product = await stripe.products.create({ name: 'Premium' });
    const premium = await stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: 4900, recurring: { interval: 'month' } });
    bundle = { STRIPE_SECRET_KEY: 'sk_test_old', STRIPE_PRICE_PREMIUM: premium.id };
    sm.put('flagship/api', bundle);
    secrets = await SecretStore.create({ env: {}, secretId: 'flagship/api', endpoint: sm.url, refreshSeconds: 1 });
    f = await ManagementApiFixture.start({ STRIPE_API_BASE: fake.url, STRIPE_MAX_NETWORK_RETRIES: '0' }, {}, secrets);
    owner = await f.signUp();
  });

  afterAll(async () => {
    await f?.stop();
    secrets?.close();
    await fake?.close();
    await sm?.close();
    for (const [k, v] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.key]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  const checkout = () => f.call<{ url: string }>('POST', '/api/billing/checkout', { token: owner.idToken, tenant: owner.tenantId, json: body });
  const lastPrice = () => ([...fake.checkoutSessions.values()].pop()!['_line_items'] as Array<{ price: { id: string } }>)[0].price.id;

  it('a rolled API key: 503 while Stripe refuses the old key, 200 once Secrets Manager has the new one, no restart', async () => {
    expect((await checkout()).status).toBe(200);
    fake.apiKeys.clear();
    fake.apiKeys.add('sk_test_new');
    const refused = await checkout();
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.text).not.toContain('sk_test');
    sm.put('flagship/api', { ...bundle, STRIPE_SECRET_KEY: 'sk_test_new' });
    bundle = { ...bundle, STRIPE_SECRET_KEY: 'sk_test_new' };
    await waitFor(async () => (await checkout()).status === 200, 5000, 200);
  });

  it('a changed plan price is used from the next checkout on', async () => {
    stripe = fake.client('sk_test_new');
    const product = await stripe.products.create({ name: 'Premium 2' });
    const next = await stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: 5900, recurring: { interval: 'month' } });
    sm.put('flagship/api', { ...bundle, STRIPE_PRICE_PREMIUM: next.id });
    await waitFor(async () => (await checkout()).status === 200 && lastPrice() === next.id, 5000, 200);
  });
});
