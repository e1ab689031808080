import type Stripe from 'stripe';
import { FakeStripe } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * Checkout, portal and subscription through real HTTP and Postgres, with Stripe played by the local
 * fake and reached through the real stripe SDK. The subscription rows billing-worker writes are
 * written here by SQL where a test needs one (the worker's own tests cover how it writes them).
 */
describe('management-api billing: checkout, portal, subscription', () => {
  let f: ManagementApiFixture;
  let fake: FakeStripe;
  let stripe: Stripe;
  let prices: Record<'free' | 'standard' | 'premium', Stripe.Price>;
  let alice: SignedUp;
  const body = { type: 'subscription', planId: 'premium', successUrl: 'http://localhost:5173/billing/done', cancelUrl: 'http://localhost:5173/billing' };

  beforeAll(async () => {
    fake = await FakeStripe.start({ apiKey: 'sk_test_mgmt' });
    stripe = fake.client();
    const price = async (name: string, amount: number) => {
      const product = await stripe.products.create({ name });
      return stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: amount, recurring: { interval: 'month' } });
    };
    prices = { free: await price('Free', 0), standard: await price('Standard', 1900), premium: await price('Premium', 4900) };
    f = await ManagementApiFixture.start({
      STRIPE_SECRET_KEY: 'sk_test_mgmt',
      STRIPE_API_BASE: fake.url,
      STRIPE_MAX_NETWORK_RETRIES: '0',
      STRIPE_TIMEOUT_MS: '3000',
      STRIPE_PRICE_FREE: prices.free.id,
      STRIPE_PRICE_STANDARD: prices.standard.id,
      STRIPE_PRICE_PREMIUM: prices.premium.id,
    });
    alice = await f.signUp();
  });

  afterAll(async () => {
    await f?.stop();
    await fake?.close();
  });

  const checkout = (who: SignedUp, json: unknown, headers: Record<string, string> = {}) =>
    f.call<{ url: string }>('POST', '/api/billing/checkout', { token: who.idToken, tenant: who.tenantId, json, headers });

  it('a tenant without a subscription gets a Stripe Checkout session in subscription mode, for its own customer', async () => {
    const res = await checkout(alice, body);
    expect(res.status).toBe(200);
    expect(res.body.url).toMatch(new RegExp(`^${fake.url}/checkout/cs_test_`));
    const session = [...fake.checkoutSessions.values()].pop()!;
    expect(session).toMatchObject({ mode: 'subscription', client_reference_id: alice.tenantId, success_url: body.successUrl, cancel_url: body.cancelUrl });
    expect(fake.requests.find((r) => r.path === '/v1/checkout/sessions')?.params['payment_method_collection']).toBe('if_required');
    expect((session['_line_items'] as Array<{ price: { id: string }; quantity: number }>).map((li) => [li.price.id, li.quantity])).toEqual([[prices.premium.id, 1]]);
    const customer = await stripe.customers.retrieve(session['customer'] as string);
    expect((customer as Stripe.Customer).metadata).toEqual({ tenantId: alice.tenantId, productKey: 'core' });
    const again = await checkout(alice, { ...body, planId: 'standard' });
    expect(again.status).toBe(200);
    // One Stripe customer per tenant and product key.
    expect([...fake.checkoutSessions.values()].pop()!['customer']).toBe(session['customer']);
    expect((await f.sql(`SELECT count(*)::int AS n FROM billing_customers WHERE tenant_id = $1`, [alice.tenantId])).rows[0].n).toBe(1);
  });

  it("passes the caller's Idempotency-Key on to Stripe, scoped to the tenant, and replays the same answer", async () => {
    const first = await checkout(alice, body, { 'idempotency-key': 'order-42' });
    const replay = await checkout(alice, body, { 'idempotency-key': 'order-42' });
    expect(first.status).toBe(200);
    expect(replay.body.url).toBe(first.body.url);
    const sent = fake.requests.filter((r) => r.path === '/v1/checkout/sessions' && r.method === 'POST' && r.idempotencyKey?.includes('order-42'));
    expect(sent.length).toBeGreaterThanOrEqual(1);
    expect(sent[0].idempotencyKey).toBe(`flagship-checkout-${alice.tenantId}-order-42`);
  });

  it('a caller key as long as allowed (255) reaches Stripe hashed within its 255 (a retry gets the same session), and the document marks the header optional', async () => {
    const long = 'k'.repeat(255);
    const first = await checkout(alice, body, { 'idempotency-key': long });
    expect(first.status).toBe(200);
    const sent = fake.requests.filter((r) => r.path === '/v1/checkout/sessions' && r.method === 'POST' && r.idempotencyKey?.startsWith(`flagship-checkout-${alice.tenantId}-sha256-`));
    expect(sent).toHaveLength(1);
    expect(sent[0].idempotencyKey!.length).toBeLessThanOrEqual(255);
    expect((await checkout(alice, body, { 'idempotency-key': long })).body.url).toBe(first.body.url);
    // No required header of its own: the key is optional on both routes.
    const doc = (await f.call('GET', '/openapi.json')).body as { paths: Record<string, { post: { parameters: Array<{ name: string; required?: boolean }> } }> };
    for (const path of ['/api/billing/checkout', '/api/billing/portal']) {
      const keys = doc.paths[path].post.parameters.filter((p) => p.name.toLowerCase() === 'idempotency-key');
      expect(keys).toEqual([expect.objectContaining({ name: 'Idempotency-Key', required: false })]);
    }
  });

  it('credits: a one-time Checkout session in payment mode for the amount', async () => {
    const res = await checkout(alice, { type: 'credits', amount: 2500, successUrl: body.successUrl, cancelUrl: body.cancelUrl });
    expect(res.status).toBe(200);
    const session = [...fake.checkoutSessions.values()].pop()!;
    expect(session).toMatchObject({ mode: 'payment', amount_total: 2500, currency: 'usd', metadata: { tenantId: alice.tenantId, productKey: 'core', kind: 'credits' } });
    // Recorded with what it may grant: billing-worker credits only sessions recorded here, up to that amount.
    const recorded = await f.sql(`SELECT tenant_id, product_key, kind, amount::int AS amount, currency, plan_id, created_by FROM checkout_sessions WHERE stripe_session_id = $1`, [session['id']]);
    expect(recorded.rows).toEqual([{ tenant_id: alice.tenantId, product_key: 'core', kind: 'credits', amount: 2500, currency: 'usd', plan_id: null, created_by: alice.userId }]);
  });

  it("the Stripe customer's e-mail is one a member proved, never a tenant's typed-in primaryEmail as such", async () => {
    const carol = await f.signUp();
    const customerEmail = async () => {
      const session = [...fake.checkoutSessions.values()].pop()!;
      return ((await stripe.customers.retrieve(session['customer'] as string)) as Stripe.Customer).email;
    };
    // The personal tenant's primaryEmail is the e-mail carol signed up with: it is used.
    expect((await checkout(carol, body)).status).toBe(200);
    expect(await customerEmail()).toBe(carol.email);
    // A tenant carol creates naming someone else's address: Stripe must not mail receipts there.
    const spoof = await f.call<{ id: string }>('POST', '/api/tenants', { token: carol.idToken, json: { name: 'Spoof', primaryEmail: 'ceo@victim.test' } });
    expect(spoof.status).toBe(201);
    expect((await checkout({ ...carol, tenantId: spoof.body.id }, body)).status).toBe(200);
    expect(await customerEmail()).toBe(carol.email);
    expect(fake.requests.filter((r) => r.path === '/v1/customers' && r.method === 'POST').map((r) => r.params['email'])).not.toContain('ceo@victim.test');
  });

  it('records every Checkout session it creates, once, even when an idempotent retry gets the same session back', async () => {
    const bob = await f.signUp();
    const first = await checkout(bob, body, { 'idempotency-key': 'plan-once' });
    const replay = await checkout(bob, body, { 'idempotency-key': 'plan-once' });
    expect(replay.body.url).toBe(first.body.url);
    const sessionId = first.body.url.split('/').pop();
    const recorded = await f.sql(`SELECT stripe_session_id, kind, amount, plan_id, created_by FROM checkout_sessions WHERE tenant_id = $1`, [bob.tenantId]);
    expect(recorded.rows).toEqual([{ stripe_session_id: sessionId, kind: 'subscription', amount: null, plan_id: 'premium', created_by: bob.userId }]);
  });

  it('refuses bad input with 400/422, never reaching Stripe', async () => {
    const before = fake.requests.length;
    const cases: unknown[] = [
      { ...body, planId: 'gold' },
      { ...body, planId: undefined },
      { ...body, type: 'credits', planId: undefined },
      { type: 'credits', amount: 10, successUrl: body.successUrl, cancelUrl: body.cancelUrl },
      { type: 'credits', amount: 12.5, successUrl: body.successUrl, cancelUrl: body.cancelUrl },
      { ...body, successUrl: 'javascript:alert(1)' },
      { ...body, cancelUrl: 42 },
      { ...body, extra: true },
      { ...body, type: 'gift' },
      { ...body, successUrl: 'http://localhost/\u0000' },
      { type: 'credits', amount: '2500', successUrl: body.successUrl, cancelUrl: body.cancelUrl },
      { ...body, planId: ['premium'] },
    ];
    for (const json of cases) {
      const res = await checkout(alice, json);
      expect([400, 422]).toContain(res.status);
      expect(res.body).toMatchObject({ status: res.status });
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    }
    const portal = await f.call('POST', '/api/billing/portal', { token: alice.idToken, json: { returnUrl: body.cancelUrl, productKey: 'partner_portal' } });
    expect(portal.status).toBe(422);
    expect(fake.requests.length).toBe(before);
  });

  it('is for tenant admins only: editors and other tenants get 403, and X-Tenant-ID is required on checkout', async () => {
    const ed = `ed-${Date.now()}@flagship.test`;
    const editor = await f.addMember(alice, alice.tenantId, ed, 'editor');
    const asEditor = { ...editor, tenantId: alice.tenantId };
    expect((await checkout(asEditor, body)).status).toBe(403);
    expect((await f.call('POST', '/api/billing/portal', { token: editor.idToken, tenant: alice.tenantId, json: { returnUrl: body.cancelUrl } })).status).toBe(403);
    expect((await f.call('GET', '/api/billing/subscription', { token: editor.idToken, tenant: alice.tenantId })).status).toBe(403);
    const bob = await f.signUp();
    expect((await checkout({ ...bob, tenantId: alice.tenantId }, body)).status).toBe(403);
    expect((await f.call('POST', '/api/billing/checkout', { token: alice.idToken, json: body })).status).toBe(400);
    expect((await f.call('POST', '/api/billing/checkout', { tenant: alice.tenantId, json: body })).status).toBe(401);
  });

  it('with a live subscription: a portal session whose subscription_update_confirm flow switches the single item to the new price', async () => {
    const carol = await f.signUp();
    await checkout(carol, body);
    const session = [...fake.checkoutSessions.values()].pop()!;
    fake.completeCheckout(session['id'] as string);
    const sub = await stripe.subscriptions.retrieve((await stripe.checkout.sessions.retrieve(session['id'] as string)).subscription as string);
    // What billing-worker writes after the webhooks, and the portal configuration it keeps.
    await f.sql(
      `INSERT INTO billing_subscriptions (stripe_subscription_id, tenant_id, product_key, stripe_customer_id, stripe_item_id, price_id, plan, status,
         current_period_start, current_period_end, cancel_at_period_end, stripe_created)
       VALUES ($1, $2, 'core', $3, $4, $5, 'premium', 'active', to_timestamp($6), to_timestamp($7), false, $8)`,
      [sub.id, carol.tenantId, sub.customer, sub.items.data[0].id, prices.premium.id, sub.items.data[0].current_period_start, sub.items.data[0].current_period_end, sub.created],
    );
    const config = await stripe.billingPortal.configurations.create({
      features: {
        payment_method_update: { enabled: true },
        subscription_update: { enabled: true, default_allowed_updates: ['price'], products: Object.values(prices).map((p) => ({ product: p.product as string, prices: [p.id] })) },
      },
    });
    await f.sql(`INSERT INTO billing_state (key, value) VALUES ('portal_configuration_id', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [config.id]);

    const res = await checkout(carol, { ...body, planId: 'standard' });
    expect(res.status).toBe(200);
    expect(res.body.url).toMatch(new RegExp(`^${fake.url}/portal/bps_`));
    const portal = [...fake.portalSessions.values()].pop()!;
    expect(portal['configuration']).toBe(config.id);
    expect(portal['flow']).toMatchObject({
      type: 'subscription_update_confirm',
      subscription_update_confirm: { subscription: sub.id, items: [{ id: sub.items.data[0].id, price: prices.standard.id, quantity: 1 }] },
      after_completion: { type: 'redirect', redirect: { return_url: body.successUrl } },
    });
    fake.confirmPortalFlow(portal['id'] as string);
    expect((await stripe.subscriptions.retrieve(sub.id)).items.data.map((i) => i.price.id)).toEqual([prices.standard.id]);

    const same = await checkout(carol, body);
    expect(same.status).toBe(409);
    expect(same.body).toMatchObject({ type: '/problems/already-on-plan' });

    const got = await f.call('GET', '/api/billing/subscription', { token: carol.idToken });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: sub.id,
      plan: 'premium',
      status: 'active',
      currentPeriodStart: new Date(sub.items.data[0].current_period_start * 1000).toISOString(),
      currentPeriodEnd: new Date(sub.items.data[0].current_period_end * 1000).toISOString(),
      cancelAtPeriodEnd: false,
      productKey: 'core',
    });
  });

  it('GET subscription of a tenant that never subscribed: its plan, no Stripe id', async () => {
    const dave = await f.signUp();
    const res = await f.call('GET', '/api/billing/subscription', { token: dave.idToken });
    expect(res.body).toEqual({ id: null, plan: 'free', status: 'active', currentPeriodStart: null, currentPeriodEnd: null, cancelAtPeriodEnd: false, productKey: 'core' });
  });

  it('portal: a session for the customer of the product key (default core), one customer per tenant and key', async () => {
    const erin = await f.signUp();
    await stripe.billingPortal.configurations.list(); // a configuration exists (created above), as Stripe requires
    const core = await f.call<{ url: string }>('POST', '/api/billing/portal', { token: erin.idToken, json: { returnUrl: body.cancelUrl } });
    expect(core.status).toBe(200);
    expect(core.body.url).toMatch(new RegExp(`^${fake.url}/portal/bps_`));
    const insights = await f.call('POST', '/api/billing/portal', { token: erin.idToken, json: { returnUrl: body.cancelUrl, productKey: 'insights' } });
    expect(insights.status).toBe(200);
    const rows = await f.sql(`SELECT product_key, stripe_customer_id FROM billing_customers WHERE tenant_id = $1 ORDER BY product_key`, [erin.tenantId]);
    expect(rows.rows.map((r) => r.product_key)).toEqual(['core', 'insights']);
    expect(rows.rows[0].stripe_customer_id).not.toBe(rows.rows[1].stripe_customer_id);
    const sessions = [...fake.portalSessions.values()].slice(-2);
    expect(sessions.map((s) => s['customer'])).toEqual(rows.rows.map((r) => r.stripe_customer_id));
  });

  it('Stripe down (refusing connections or failing): 503 problem with Retry-After, and back to 200 when it returns', async () => {
    for (const mode of ['refuse', 'error'] as const) {
      await fake.setMode(mode);
      try {
        const res = await checkout(alice, body);
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(res.body).toMatchObject({ type: '/problems/payment-provider-unavailable', status: 503 });
        expect(JSON.stringify(res.body)).not.toContain('sk_test');
        const portal = await f.call('POST', '/api/billing/portal', { token: alice.idToken, json: { returnUrl: body.cancelUrl } });
        expect(portal.status).toBe(503);
        expect(portal.headers.get('retry-after')).toBe('5');
        // The subscription is read from Postgres: no Stripe call, still answers.
        expect((await f.call('GET', '/api/billing/subscription', { token: alice.idToken })).status).toBe(200);
      } finally {
        await fake.setMode('up');
      }
    }
    expect((await checkout(alice, body)).status).toBe(200);
  });
});
