import type Stripe from 'stripe';
import { FakeStripe } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/** Checkout sessions per tenant per hour, through real HTTP and Redis, with the fake Stripe behind the real SDK. */
describe('management-api billing: checkout sessions per tenant per hour (CHECKOUT_SESSIONS_PER_HOUR)', () => {
  let f: ManagementApiFixture;
  let fake: FakeStripe;
  let stripe: Stripe;
  const credits = { type: 'credits', amount: 1000, successUrl: 'http://localhost:5173/billing/done', cancelUrl: 'http://localhost:5173/billing' };

  beforeAll(async () => {
    fake = await FakeStripe.start({ apiKey: 'sk_test_limit' });
    stripe = fake.client();
    const price = async (name: string, amount: number) =>
      stripe.prices.create({ product: (await stripe.products.create({ name })).id, currency: 'usd', unit_amount: amount, recurring: { interval: 'month' } });
    f = await ManagementApiFixture.start({
      STRIPE_SECRET_KEY: 'sk_test_limit',
      STRIPE_API_BASE: fake.url,
      STRIPE_MAX_NETWORK_RETRIES: '0',
      STRIPE_PRICE_FREE: (await price('Free', 0)).id,
      STRIPE_PRICE_STANDARD: (await price('Standard', 1900)).id,
      STRIPE_PRICE_PREMIUM: (await price('Premium', 4900)).id,
      CHECKOUT_SESSIONS_PER_HOUR: '2',
    });
  });
  afterAll(async () => {
    await f?.stop();
    await fake?.close();
  });

  const checkout = (who: SignedUp, headers: Record<string, string> = {}) => f.call<{ url: string }>('POST', '/api/billing/checkout', { token: who.idToken, tenant: who.tenantId, json: credits, headers });
  const sessionsOf = (tenantId: string) => [...fake.checkoutSessions.values()].filter((s) => s['client_reference_id'] === tenantId).length;

  it('starts the budgeted sessions, then 429 rate-limited with Retry-After and nothing made at Stripe; a replay is free; each tenant has its own budget', async () => {
    const mallory = await f.signUp();
    const first = await checkout(mallory, { 'idempotency-key': 'buy-1' });
    expect((await checkout(mallory)).status).toBe(200);
    const stripeCalls = fake.requests.length;
    const refused = await checkout(mallory);
    expect([refused.status, refused.headers.get('content-type'), refused.body]).toEqual([
      429,
      'application/problem+json; charset=utf-8',
      expect.objectContaining({ type: '/problems/rate-limited', status: 429, limit: 2, window: 'hour', detail: expect.stringMatching(/2 checkout sessions in the last hour/) }),
    ]);
    const retryAfter = Number(refused.headers.get('retry-after'));
    // The sliding window weighs the previous hour's count down linearly: a budget spent late in one
    // fixed hour frees a place up to half an hour into the next, so at most 1.5 h.
    expect(retryAfter).toBeGreaterThan(60);
    expect(retryAfter).toBeLessThanOrEqual(5400);
    // Refused before anything reached Stripe.
    expect(fake.requests.length).toBe(stripeCalls);
    expect(sessionsOf(mallory.tenantId)).toBe(2);
    // The same request replayed under its Idempotency-Key is answered from the store, not counted.
    const replay = await checkout(mallory, { 'idempotency-key': 'buy-1' });
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body.url]).toEqual([200, 'true', first.body.url]);
    const other = await f.signUp();
    expect((await checkout(other)).status).toBe(200);
    expect(sessionsOf(other.tenantId)).toBe(1);
  });
});
