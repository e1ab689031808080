import { Client } from 'pg';
import type Stripe from 'stripe';
import { createTestEnvironment, FakeStripe, waitFor, type TestEnvironment } from '@flagship/testing';
import { billingState, createPlans, createTenantWithCustomer, type Plans, startWorker, stripeEnv, WEBHOOK_SECRET } from '../testing/billing-worker.fixture';

/**
 * Metered usage made invoiceable, against the fake Stripe through the real stripe SDK: the worker
 * makes sure of one billing meter and one metered price on it, and gives each tenant's customer its
 * own usage subscription on that price before its first meter event, never a second item of the
 * plan subscription; nothing is created twice across restarts or by two replicas.
 */
describe('billing-worker: billing meter, metered price and usage subscriptions', () => {
  let te: TestEnvironment;
  let fake: FakeStripe;
  let stripe: Stripe;
  let plans: Plans;
  let db: Client;
  let env: NodeJS.ProcessEnv;
  const workers: Array<Awaited<ReturnType<typeof startWorker>>> = [];
  const EVENT = 'flagship_ai_usage';

  beforeAll(async () => {
    te = await createTestEnvironment();
    fake = await FakeStripe.start({ apiKey: 'sk_test_pricing', webhookSecret: WEBHOOK_SECRET });
    stripe = fake.client();
    plans = await createPlans(stripe);
    env = { ...te.env, ...stripeEnv(fake, plans), METER_POLL_MS: '50', METER_BATCH_SIZE: '50' };
    db = new Client({ connectionString: te.db.url });
    await db.connect();
  });

  afterAll(async () => {
    await fake?.settled();
    for (const w of workers) await w.close().catch(() => undefined);
    await fake?.close();
    await db?.end();
    await te?.teardown();
  });

  async function start(): Promise<Awaited<ReturnType<typeof startWorker>>> {
    const w = await startWorker(env);
    workers.push(w);
    fake.webhookUrl = `${w.url}/webhooks/stripe`;
    return w;
  }

  const meters = async () => (await stripe.billing.meters.list({ limit: 100 })).data.filter((m) => m.event_name === EVENT);
  const meteredPrices = async () => (await stripe.prices.list({ limit: 100 })).data.filter((p) => p.recurring?.usage_type === 'metered');
  const creates = (path: string) => fake.requests.filter((r) => r.method === 'POST' && r.path === path && r.status === 200);
  const usageSubscriptions = async (customer: string) => (await stripe.subscriptions.list({ customer, limit: 100 })).data.filter((s) => s.items.data.every((i) => i.price.recurring?.usage_type === 'metered'));

  async function usage(tenantId: string, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await db.query<{ id: string }>(
        `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, input_tokens, output_tokens, completed_at)
         VALUES ($1, 'client-1', 'core', 'inhouse', 'm-1', 'chat.completions', 'succeeded', $2, 10, 20, now()) RETURNING id`,
        [tenantId, 1000 + i],
      );
      ids.push(r.rows[0].id);
    }
    return ids;
  }
  const unreported = async (ids: string[]) => Number((await db.query(`SELECT count(*) AS n FROM usage_ledger WHERE id = ANY($1::uuid[]) AND meter_reported_at IS NULL`, [ids])).rows[0].n);

  it('at start-up, one meter on the event name with the payload keys the reporter sends, and one metered price on it', async () => {
    await start();
    await waitFor(async () => (await meteredPrices()).length === 1, 10000);
    const [meter] = await meters();
    expect(meter).toMatchObject({
      status: 'active',
      default_aggregation: { formula: 'sum' },
      customer_mapping: { type: 'by_id', event_payload_key: 'stripe_customer_id' },
      value_settings: { event_payload_key: 'value' },
    });
    const [price] = await meteredPrices();
    expect(price.recurring).toMatchObject({ usage_type: 'metered', meter: meter.id, interval: 'month' });
    expect(price.lookup_key).toBe(`flagship-usage-${EVENT}`);
    // Usage is prepaid through credits: the invoice lists it at no charge (METER_PRICE_UNIT_AMOUNT_DECIMAL).
    expect(String(price.unit_amount_decimal)).toBe('0');
    // The worker records the ids after Stripe has answered the create: wait for its commit, not Stripe's.
    const recorded = () => db.query(`SELECT key, value FROM billing_state WHERE key IN ('usage_meter_id', 'usage_price_id') ORDER BY key`);
    await waitFor(async () => (await recorded()).rows.length === 2, 10000);
    const state = await recorded();
    expect(state.rows).toEqual([
      { key: 'usage_meter_id', value: meter.id },
      { key: 'usage_price_id', value: price.id },
    ]);
  });

  it('restarts and a second replica find the meter and price again instead of creating them twice', async () => {
    const before = fake.requests.length;
    for (const w of workers.splice(0)) await w.close();
    await Promise.all([start(), start()]);
    await waitFor(async () => fake.requests.slice(before).filter((r) => r.path === '/v1/prices' && r.method === 'GET').length >= 2, 10000);
    expect(await meters()).toHaveLength(1);
    expect(await meteredPrices()).toHaveLength(1);
    expect(creates('/v1/billing/meters')).toHaveLength(1);
    expect(creates('/v1/prices').filter((r) => r.params['lookup_key'])).toHaveLength(1);
  });

  it('a tenant with a plan gets its own usage subscription on the metered price before its first meter event; the plan subscription stays single-item', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Metered Plan');
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customerId,
      line_items: [{ price: plans.standard.id, quantity: 1 }],
      success_url: 'https://app.test/done',
      metadata: { tenantId, productKey: 'core', kind: 'subscription' },
      subscription_data: { metadata: { tenantId, productKey: 'core' } },
    });
    fake.completeCheckout(session.id);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'standard', 10000);

    const ids = await usage(tenantId, 30);
    await waitFor(async () => (await unreported(ids)) === 0, 20000);
    await fake.settled();

    const [price] = await meteredPrices();
    const subs = await usageSubscriptions(customerId);
    expect(subs).toHaveLength(1);
    expect(subs[0].items.data).toHaveLength(1);
    expect(subs[0].items.data[0].price.id).toBe(price.id);
    expect(subs[0].items.data[0].quantity).toBeUndefined();
    expect(subs[0].metadata).toMatchObject({ tenantId, productKey: 'core', kind: 'usage' });
    // Made before the first event of this customer reached Stripe.
    const subscribedAt = fake.requests.findIndex((r) => r.method === 'POST' && r.path === '/v1/subscriptions' && r.params['customer'] === customerId);
    const firstEvent = fake.requests.findIndex((r) => r.path === '/v1/billing/meter_events' && (r.params['payload'] as Record<string, string>)['stripe_customer_id'] === customerId);
    expect(subscribedAt).toBeGreaterThanOrEqual(0);
    expect(subscribedAt).toBeLessThan(firstEvent);
    const recorded = await db.query(`SELECT usage_subscription_id FROM billing_customers WHERE tenant_id = $1 AND product_key = 'core'`, [tenantId]);
    expect(recorded.rows[0].usage_subscription_id).toBe(subs[0].id);

    // The plan subscription: still one item, on the plan price; the tenant's plan untouched by the usage subscription's webhooks.
    const all = (await stripe.subscriptions.list({ customer: customerId })).data;
    const planSubs = all.filter((s) => s.id !== subs[0].id);
    expect(planSubs).toHaveLength(1);
    expect(planSubs[0].items.data.map((i) => i.price.id)).toEqual([plans.standard.id]);
    await waitFor(async () => Number((await db.query(`SELECT count(*) AS n FROM stripe_events WHERE processed_at IS NULL`)).rows[0].n) === 0, 10000);
    const state = await billingState(db, tenantId);
    expect(state.plan).toBe('standard');
    expect(state.subscriptions.map((s) => s.stripe_subscription_id)).toEqual([planSubs[0].id]);

    // Every meter event of this customer names the meter's event; all its rows, once.
    const events = fake.meterEvents.filter((e) => e.payload['stripe_customer_id'] === customerId);
    expect(events.map((e) => e.identifier).sort()).toEqual([...ids].sort());
    expect(new Set(events.map((e) => e.event_name))).toEqual(new Set([EVENT]));
  });

  it('more usage and two replicas never make a second usage subscription; one Stripe ended is replaced on the next report', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Metered Two');
    const first = await usage(tenantId, 40);
    await waitFor(async () => (await unreported(first)) === 0, 20000);
    const more = await usage(tenantId, 40);
    await waitFor(async () => (await unreported(more)) === 0, 20000);
    const subs = await usageSubscriptions(customerId);
    expect(subs).toHaveLength(1);
    expect(creates('/v1/subscriptions').filter((r) => r.params['customer'] === customerId)).toHaveLength(1);

    // Canceled (in the portal, say): the webhook clears the record, and the next usage subscribes again.
    await stripe.subscriptions.cancel(subs[0].id);
    await waitFor(async () => (await db.query(`SELECT usage_subscription_id FROM billing_customers WHERE tenant_id = $1`, [tenantId])).rows[0].usage_subscription_id === null, 10000);
    const later = await usage(tenantId, 5);
    await waitFor(async () => (await unreported(later)) === 0, 20000);
    const live = (await usageSubscriptions(customerId)).filter((s) => s.status === 'active');
    expect(live).toHaveLength(1);
    expect(live[0].id).not.toBe(subs[0].id);
    expect((await billingState(db, tenantId)).subscriptions).toEqual([]);
  });

  it("Stripe down at a customer's first report: no event goes out without its usage subscription, and both follow once Stripe answers", async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Metered Down');
    await fake.setMode('error');
    let ids: string[];
    try {
      ids = await usage(tenantId, 10);
      await new Promise((r) => setTimeout(r, 800));
      expect(await unreported(ids)).toBe(10);
      expect(fake.requests.some((r) => r.path === '/v1/subscriptions' && r.status === 500)).toBe(true);
    } finally {
      await fake.setMode('up');
    }
    await waitFor(async () => (await unreported(ids)) === 0, 20000);
    expect(await usageSubscriptions(customerId)).toHaveLength(1);
    expect(fake.meterEvents.filter((e) => e.payload['stripe_customer_id'] === customerId)).toHaveLength(10);
  });

  it('Stripe down from start-up: no meter, price, subscription or event until it answers, then each once', async () => {
    for (const w of workers.splice(0)) await w.close();
    // A Stripe account of its own (no meter yet), down from the start.
    const down = await FakeStripe.start({ apiKey: 'sk_test_down', webhookSecret: WEBHOOK_SECRET });
    try {
      const downPlans = await createPlans(down.client());
      await down.setMode('error');
      const w = await startWorker({ ...te.env, ...stripeEnv(down, downPlans), METER_POLL_MS: '50' });
      workers.push(w);
      const { rows } = await db.query<{ id: string }>(`INSERT INTO tenants (name, primary_email) VALUES ('Down', 'down@example.test') RETURNING id`);
      const ids = await usage(rows[0].id, 20);
      await new Promise((r) => setTimeout(r, 800));
      expect(await unreported(ids)).toBe(20);
      expect(down.meters.size).toBe(0);
      expect(down.meterEvents).toHaveLength(0);
      expect(down.requests.filter((r) => r.status === 500).length).toBeGreaterThan(0);
      await down.setMode('up');
      await waitFor(async () => (await unreported(ids)) === 0, 20000);
      expect(down.meters.size).toBe(1);
      expect([...down.prices.values()].filter((p) => p['lookup_key'] === `flagship-usage-${EVENT}`)).toHaveLength(1);
      const customer = (await db.query(`SELECT stripe_customer_id, usage_subscription_id FROM billing_customers WHERE tenant_id = $1`, [rows[0].id])).rows[0];
      expect([...down.subscriptions.values()].filter((sub) => sub['customer'] === customer.stripe_customer_id).map((sub) => sub['id'])).toEqual([customer.usage_subscription_id]);
      expect(down.meterEvents.map((e) => e.identifier).sort()).toEqual([...ids].sort());
    } finally {
      for (const w of workers.splice(0)) await w.close();
      await down.close();
    }
  });
});
