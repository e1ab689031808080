import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import Stripe from 'stripe';
import { FakeStripe } from './fake-stripe';
import { waitFor } from './processes';

/** The fake Stripe through the real stripe SDK: what our services rely on behaves as Stripe documents. */
describe('FakeStripe through stripe-node', () => {
  let fake: FakeStripe;
  let stripe: Stripe;
  let hook: Server;
  const received: Array<{ body: string; signature: string }> = [];
  const secret = 'whsec_test_fake';

  beforeAll(async () => {
    hook = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['stripe-signature']) });
        res.end('{}');
      });
    });
    hook.listen(0, '127.0.0.1');
    await once(hook, 'listening');
    fake = await FakeStripe.start({ webhookUrl: `http://127.0.0.1:${(hook.address() as { port: number }).port}/`, webhookSecret: secret });
    stripe = fake.client();
  });

  afterAll(async () => {
    await fake.close();
    hook.close();
  });

  async function plan(amount: number) {
    const product = await stripe.products.create({ name: `plan ${amount}` });
    return stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: amount, recurring: { interval: 'month' } });
  }

  it('answers Stripe error shapes the SDK turns into its typed errors', async () => {
    const missing = await stripe.customers.retrieve('cus_nope').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(missing).toMatchObject({ statusCode: 404, code: 'resource_missing', param: 'id' });
    // A Checkout Session it never created, as billing-worker re-reads one named by a webhook.
    const noSession = await stripe.checkout.sessions.retrieve('cs_test_neverMinted').catch((e: unknown) => e);
    expect(noSession).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(noSession).toMatchObject({ statusCode: 404, code: 'resource_missing', message: "No such checkout.session: 'cs_test_neverMinted'" });
    const badKey = await new Stripe('sk_test_wrong', { ...fake.clientOptions(), maxNetworkRetries: 0 }).customers.create({}).catch((e: unknown) => e);
    expect(badKey).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
  });

  it('replays a request with the same Idempotency-Key and refuses the key with other parameters', async () => {
    const a = await stripe.customers.create({ email: 'a@x.test' }, { idempotencyKey: 'k1' });
    const b = await stripe.customers.create({ email: 'a@x.test' }, { idempotencyKey: 'k1' });
    expect(b.id).toBe(a.id);
    expect(b.lastResponse.headers['idempotent-replayed']).toBe('true');
    const other = await stripe.customers.create({ email: 'b@x.test' }, { idempotencyKey: 'k1' }).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
  });

  it('completes a subscription checkout into a single-item subscription with period dates on the item, and signed events', async () => {
    const price = await plan(1500);
    const customer = await stripe.customers.create({ metadata: { tenantId: 't1' } });
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customer.id,
      line_items: [{ price: price.id, quantity: 1 }],
      success_url: 'https://app.test/ok',
      subscription_data: { metadata: { tenantId: 't1' } },
    });
    expect(session.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/checkout\/cs_test_/);
    fake.completeCheckout(session.id);
    const done = await stripe.checkout.sessions.retrieve(session.id);
    expect(done.status).toBe('complete');
    const sub = await stripe.subscriptions.retrieve(done.subscription as string);
    expect(sub.items.data).toHaveLength(1);
    expect(sub.items.data[0].current_period_end).toBeGreaterThan(sub.items.data[0].current_period_start);
    expect(sub.metadata).toEqual({ tenantId: 't1' });
    const invoice = await stripe.invoices.retrieve(sub.latest_invoice as string);
    expect(invoice.parent?.subscription_details?.subscription).toBe(sub.id);
    await fake.settled();
    const completed = received.find((r) => JSON.parse(r.body).type === 'checkout.session.completed');
    expect(completed).toBeDefined();
    const event = stripe.webhooks.constructEvent(completed!.body, completed!.signature, secret);
    expect((event.data.object as Stripe.Checkout.Session).id).toBe(session.id);
    expect(() => stripe.webhooks.constructEvent(completed!.body, completed!.signature, 'whsec_other')).toThrow(Stripe.errors.StripeSignatureVerificationError);
    const listed = await stripe.events.list({ types: ['customer.subscription.*'], limit: 100 });
    expect(listed.data.map((e) => e.type)).toContain('customer.subscription.created');
  });

  it('enforces the portal rules: payment_method_update for subscription_update, listed prices, single-item subscriptions', async () => {
    const a = await plan(1000);
    const b = await plan(2000);
    const c = await plan(3000);
    await expect(
      stripe.billingPortal.configurations.create({ features: { subscription_update: { enabled: true, default_allowed_updates: ['price'], products: [{ product: a.product as string, prices: [a.id] }] } } }),
    ).rejects.toThrow(/payment_method_update/);
    const config = await stripe.billingPortal.configurations.create({
      features: {
        payment_method_update: { enabled: true },
        subscription_update: { enabled: true, default_allowed_updates: ['price'], products: [{ product: a.product as string, prices: [a.id] }, { product: b.product as string, prices: [b.id] }] },
      },
    });
    const customer = await stripe.customers.create({});
    const session = await stripe.checkout.sessions.create({ mode: 'subscription', customer: customer.id, line_items: [{ price: a.id, quantity: 1 }], success_url: 'https://app.test/ok' });
    fake.completeCheckout(session.id);
    const sub = await stripe.subscriptions.retrieve((await stripe.checkout.sessions.retrieve(session.id)).subscription as string);
    const flow = (price: string) => ({
      customer: customer.id,
      configuration: config.id,
      flow_data: { type: 'subscription_update_confirm' as const, subscription_update_confirm: { subscription: sub.id, items: [{ id: sub.items.data[0].id, price, quantity: 1 }] } },
    });
    await expect(stripe.billingPortal.sessions.create(flow(c.id))).rejects.toThrow(/not one of the prices/);
    const ps = await stripe.billingPortal.sessions.create(flow(b.id));
    fake.confirmPortalFlow(ps.id);
    expect((await stripe.subscriptions.retrieve(sub.id)).items.data[0].price.id).toBe(b.id);
    await stripe.subscriptions.update(sub.id, { items: [{ price: c.id }] });
    await expect(stripe.billingPortal.sessions.create(flow(a.id))).rejects.toThrow(/single item/);
  });

  it('addPrice: a recurring price under a chosen id, usable in a checkout; a taken id is refused', async () => {
    const p = fake.addPrice({ id: 'price_fixed_test', productName: 'Fixed', unitAmount: 1900 });
    const price = await stripe.prices.retrieve('price_fixed_test');
    expect([price.id, price.unit_amount, price.recurring?.interval, price.product]).toEqual(['price_fixed_test', 1900, 'month', p['product']]);
    expect((await stripe.products.retrieve(price.product as string)).name).toBe('Fixed');
    const session = await stripe.checkout.sessions.create({ mode: 'subscription', line_items: [{ price: 'price_fixed_test', quantity: 1 }], success_url: 'https://app.test/ok' });
    expect(session.amount_total).toBe(1900);
    expect(() => fake.addPrice({ id: 'price_fixed_test', productName: 'Again', unitAmount: 1 })).toThrow(/exists/);
  });

  it('deduplicates meter events by identifier and refuses timestamps older than 35 days', async () => {
    const customer = await stripe.customers.create({});
    const ev = { event_name: 'ai_usage', identifier: 'row-1', payload: { stripe_customer_id: customer.id, value: '42' } };
    await stripe.billing.meterEvents.create(ev);
    const dup = await stripe.billing.meterEvents.create(ev).catch((e: unknown) => e);
    expect(dup).toMatchObject({ statusCode: 400, code: 'resource_already_exists' });
    const old = await stripe.billing.meterEvents.create({ ...ev, identifier: 'row-2', timestamp: Math.floor(Date.now() / 1000) - 36 * 86400 }).catch((e: unknown) => e);
    expect(old).toMatchObject({ statusCode: 400, param: 'timestamp' });
    expect(fake.meterEvents.filter((e) => e.identifier === 'row-1')).toHaveLength(1);
  });

  it('billing meters, metered prices on them and subscriptions to those prices follow the rules Stripe documents', async () => {
    const meterParams = {
      display_name: 'Tokens',
      event_name: 'tokens_used',
      default_aggregation: { formula: 'sum' as const },
      customer_mapping: { type: 'by_id' as const, event_payload_key: 'stripe_customer_id' },
      value_settings: { event_payload_key: 'value' },
    };
    const meter = await stripe.billing.meters.create(meterParams);
    expect(meter).toMatchObject({ object: 'billing.meter', status: 'active', event_name: 'tokens_used', value_settings: { event_payload_key: 'value' } });
    // One active meter per event name.
    await expect(stripe.billing.meters.create(meterParams)).rejects.toMatchObject({ statusCode: 400, param: 'event_name' });
    expect((await stripe.billing.meters.list({ status: 'active' })).data.map((m) => m.id)).toContain(meter.id);
    expect((await stripe.billing.meters.retrieve(meter.id)).event_name).toBe('tokens_used');

    const product = await stripe.products.create({ name: 'Usage' });
    const metered = { product: product.id, currency: 'usd', unit_amount_decimal: Stripe.Decimal.from('0.0001'), lookup_key: 'usage-v1' };
    // A metered price needs a meter.
    await expect(stripe.prices.create({ ...metered, recurring: { interval: 'month', usage_type: 'metered' } })).rejects.toMatchObject({ param: 'recurring[meter]' });
    const price = await stripe.prices.create({ ...metered, recurring: { interval: 'month', usage_type: 'metered', meter: meter.id } });
    expect(price.recurring).toMatchObject({ usage_type: 'metered', meter: meter.id });
    expect(price.unit_amount).toBeNull();
    expect(String(price.unit_amount_decimal)).toBe('0.0001');
    // A lookup key is held by one price; another takes it over only with transfer_lookup_key.
    await expect(stripe.prices.create({ ...metered, recurring: { interval: 'month', usage_type: 'metered', meter: meter.id } })).rejects.toMatchObject({ param: 'lookup_key' });
    const next = await stripe.prices.create({ ...metered, transfer_lookup_key: true, recurring: { interval: 'month', usage_type: 'metered', meter: meter.id } });
    expect((await stripe.prices.list({ lookup_keys: ['usage-v1'] })).data.map((p) => p.id)).toEqual([next.id]);

    const customer = await stripe.customers.create({});
    await expect(stripe.subscriptions.create({ customer: customer.id, items: [{ price: next.id, quantity: 1 }] })).rejects.toMatchObject({ param: 'items[0][quantity]' });
    const sub = await stripe.subscriptions.create({ customer: customer.id, items: [{ price: next.id }], metadata: { kind: 'usage' } });
    expect(sub).toMatchObject({ status: 'active', metadata: { kind: 'usage' } });
    expect(sub.items.data).toHaveLength(1);
    expect(sub.items.data[0].quantity).toBeUndefined();
    expect((await stripe.subscriptions.list({ customer: customer.id, price: next.id })).data.map((s) => s.id)).toEqual([sub.id]);
    expect((await stripe.subscriptions.list({ customer: customer.id, price: price.id })).data).toEqual([]);
    // Billed in arrears: the invoice opening the period is for nothing, and paid.
    const [invoice] = fake.eventsOfType('invoice.paid').filter((e) => (e['data'] as { object: { customer: string } }).object.customer === customer.id);
    expect((invoice['data'] as { object: { amount_due: number } }).object.amount_due).toBe(0);
    expect(fake.eventsOfType('customer.subscription.created').some((e) => (e['data'] as { object: { id: string } }).object.id === sub.id)).toBe(true);
  });

  it('a paid payment-mode checkout leaves a charge; refunds grow its cumulative amount_refunded; disputes open and close; each with its events', async () => {
    const customer = await stripe.customers.create({});
    const session = await stripe.checkout.sessions.create({
      mode: 'payment',
      customer: customer.id,
      line_items: [{ price_data: { currency: 'usd', unit_amount: 2500, product_data: { name: 'credits' } }, quantity: 1 }],
      success_url: 'https://app.test/ok',
    });
    const paid = fake.completeCheckout(session.id);
    const pi = paid['payment_intent'] as string;
    expect((await stripe.checkout.sessions.list({ payment_intent: pi })).data.map((s) => s.id)).toEqual([session.id]);
    const [charge] = (await stripe.charges.list({ payment_intent: pi })).data;
    expect(charge).toMatchObject({ object: 'charge', amount: 2500, amount_captured: 2500, amount_refunded: 0, refunded: false, disputed: false, paid: true, status: 'succeeded', customer: customer.id, payment_intent: pi, currency: 'usd' });

    const first = await stripe.refunds.create({ payment_intent: pi, amount: 1000 });
    expect(first).toMatchObject({ object: 'refund', amount: 1000, charge: charge.id, payment_intent: pi, status: 'succeeded', currency: 'usd' });
    expect(await stripe.charges.retrieve(charge.id)).toMatchObject({ amount_refunded: 1000, refunded: false });
    await expect(stripe.refunds.create({ charge: charge.id, amount: 1600 })).rejects.toMatchObject({ statusCode: 400, param: 'amount' });
    const rest = await stripe.refunds.create({ charge: charge.id });
    expect(rest.amount).toBe(1500);
    expect(await stripe.charges.retrieve(charge.id)).toMatchObject({ amount_refunded: 2500, refunded: true });
    await expect(stripe.refunds.create({ charge: charge.id })).rejects.toMatchObject({ statusCode: 400, code: 'charge_already_refunded' });
    expect(await stripe.refunds.retrieve(first.id)).toMatchObject({ id: first.id, amount: 1000 });
    const refundedEvents = fake.eventsOfType('charge.refunded').filter((e) => (e['data'] as { object: { id: string } }).object.id === charge.id);
    expect(refundedEvents.map((e) => (e['data'] as { object: { amount_refunded: number } }).object.amount_refunded)).toEqual([1000, 2500]);
    expect(fake.eventsOfType('refund.created').map((e) => (e['data'] as { object: { id: string } }).object.id)).toEqual(expect.arrayContaining([first.id, rest.id]));

    // A second purchase, disputed: a chargeback cannot be refunded; the merchant may accept it (lost).
    const other = await stripe.checkout.sessions.create({ mode: 'payment', customer: customer.id, line_items: [{ price_data: { currency: 'usd', unit_amount: 900, product_data: { name: 'credits' } }, quantity: 1 }], success_url: 'https://app.test/ok' });
    const [disputedCharge] = (await stripe.charges.list({ payment_intent: fake.completeCheckout(other.id)['payment_intent'] as string })).data;
    const dispute = fake.openDispute(disputedCharge.id);
    expect(await stripe.disputes.retrieve(dispute['id'] as string)).toMatchObject({ object: 'dispute', amount: 900, charge: disputedCharge.id, status: 'needs_response', is_charge_refundable: false, reason: 'general' });
    expect((await stripe.charges.retrieve(disputedCharge.id)).disputed).toBe(true);
    await expect(stripe.refunds.create({ charge: disputedCharge.id })).rejects.toMatchObject({ code: 'charge_disputed' });
    expect((await stripe.disputes.list({ charge: disputedCharge.id })).data.map((d) => d.id)).toEqual([dispute['id']]);
    expect((await stripe.disputes.close(dispute['id'] as string)).status).toBe('lost');
    await expect(stripe.disputes.close(dispute['id'] as string)).rejects.toMatchObject({ statusCode: 400 });
    expect(fake.eventsOfType('charge.dispute.created').length).toBe(1);
    expect(fake.eventsOfType('charge.dispute.closed').map((e) => (e['data'] as { object: { status: string } }).object.status)).toEqual(['lost']);
    // Stripe lists events of at most 20 types at once.
    await expect(stripe.events.list({ types: Array.from({ length: 21 }, (_, i) => `type.${i}`) })).rejects.toMatchObject({ statusCode: 400, param: 'types' });
  });

  it('can be down: 500 api_error, or connections refused, and comes back', async () => {
    await fake.setMode('error');
    await expect(stripe.customers.create({})).rejects.toBeInstanceOf(Stripe.errors.StripeAPIError);
    await fake.setMode('refuse');
    await expect(stripe.customers.create({})).rejects.toBeInstanceOf(Stripe.errors.StripeConnectionError);
    await fake.setMode('up');
    await waitFor(async () => (await stripe.customers.create({})).id.startsWith('cus_'));
  });
});

describe('FakeStripe bound for a container network', () => {
  it('listens on every interface when told, is called on loopback, and links its pages at the public URL', async () => {
    const fake = await FakeStripe.start({ host: '0.0.0.0', publicUrl: 'http://localhost:12111/' });
    try {
      expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const stripe = fake.client();
      fake.addPrice({ id: 'price_standard', productName: 'Standard', unitAmount: 1900 });
      const session = await stripe.checkout.sessions.create({ mode: 'subscription', line_items: [{ price: 'price_standard' }], success_url: 'https://app.test/ok' });
      expect(session.url).toBe(`http://localhost:12111/checkout/${session.id}`);
      const customer = await stripe.customers.create({});
      await stripe.billingPortal.configurations.create({ features: { payment_method_update: { enabled: true } } });
      const portal = await stripe.billingPortal.sessions.create({ customer: customer.id });
      expect(portal.url).toBe(`http://localhost:12111/portal/${portal.id}`);
      // The page the link names is served (here through loopback, where the published port leads).
      const page = await fetch(`${fake.url}/checkout/${session.id}`);
      expect([page.status, await page.text()]).toEqual([200, expect.stringContaining('Fake Stripe Checkout')]);
    } finally {
      await fake.close();
    }
  });
});
