import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { Client } from 'pg';
import type Stripe from 'stripe';
import { FakeStripe, http, waitFor } from '@flagship/testing';
import { StripeEventsCatchUpService } from '../stripe/stripe-events-catch-up.service';
import { billingState, createCreditsCheckout, createTenantWithCustomer, type Plans, startWorkerStack, WEBHOOK_SECRET, type WorkerStack } from '../testing/billing-worker.fixture';

/**
 * billing-worker's Stripe webhooks through real HTTP, Postgres and Redis, with Stripe played by the
 * local fake through the real stripe SDK: events are delivered signed as Stripe signs them.
 */
describe('billing-worker: Stripe webhooks and subscription sync', () => {
  let stack: WorkerStack;
  let fake: FakeStripe;
  let stripe: Stripe;
  let plans: Plans;
  let worker: WorkerStack['worker'];
  let db: Client;
  let changed: string[];

  beforeAll(async () => {
    stack = await startWorkerStack('sk_test_worker');
    ({ fake, stripe, plans, worker, db, changed } = stack);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  async function subscribe(customerId: string, tenantId: string, price: Stripe.Price): Promise<string> {
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customerId,
      client_reference_id: tenantId,
      line_items: [{ price: price.id, quantity: 1 }],
      success_url: 'https://app.test/done',
      metadata: { tenantId, productKey: 'core', kind: 'subscription' },
      subscription_data: { metadata: { tenantId, productKey: 'core' } },
    });
    fake.completeCheckout(session.id);
    await fake.settled();
    return (await stripe.checkout.sessions.retrieve(session.id)).subscription as string;
  }

  async function portalChange(customerId: string, subscriptionId: string, price: Stripe.Price): Promise<void> {
    const sub = await stripe.subscriptions.retrieve(subscriptionId);
    const ps = await stripe.billingPortal.sessions.create({
      customer: customerId,
      flow_data: { type: 'subscription_update_confirm', subscription_update_confirm: { subscription: subscriptionId, items: [{ id: sub.items.data[0].id, price: price.id, quantity: 1 }] } },
    });
    fake.confirmPortalFlow(ps.id);
    await fake.settled();
  }

  const unprocessed = async () => Number((await db.query(`SELECT count(*) AS n FROM stripe_events WHERE processed_at IS NULL`)).rows[0].n);

  it('keeps a portal configuration allowing every plan price (started with the worker)', async () => {
    const id = await waitFor(async () => (await db.query(`SELECT value FROM billing_state WHERE key = 'portal_configuration_id'`)).rows[0]?.value as string | undefined);
    const config = await stripe.billingPortal.configurations.retrieve(id);
    expect(config.features.payment_method_update.enabled).toBe(true);
    expect(config.features.subscription_update.enabled).toBe(true);
    expect(config.features.subscription_update.products?.flatMap((p) => p.prices).sort()).toEqual([plans.free.id, plans.standard.id, plans.premium.id].sort());
  });

  it('new checkout: premium plan, its enterprise entitlement for core, and a tenant-changed message for the gateway', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Premium Co');
    const subId = await subscribe(customerId, tenantId, plans.premium);
    const state = await waitFor(async () => {
      const s = await billingState(db, tenantId);
      return s.plan === 'premium' && s.entitlements.length === 1 ? s : undefined;
    });
    expect(state.status).toBe('active');
    expect(state.subscriptions).toEqual([expect.objectContaining({ stripe_subscription_id: subId, plan: 'premium', status: 'active', cancel_at_period_end: false })]);
    // Period dates come from the subscription's item (API versions since stripe-node 18).
    expect(state.subscriptions[0].current_period_end!.getTime()).toBeGreaterThan(Date.now() + 25 * 86400_000);
    expect(state.entitlements).toEqual([{ product_key: 'core', tier: 'enterprise', source: 'plan' }]);
    const ledger = await waitFor(async () => {
      const { rows } = await db.query(`SELECT kind, amount, product_key FROM billing_ledger WHERE tenant_id = $1`, [tenantId]);
      return rows.length > 0 ? rows : undefined;
    });
    expect(ledger).toEqual([{ kind: 'invoice_paid', amount: '4900', product_key: 'core' }]);
    await waitFor(async () => changed.includes(tenantId));
    expect(fake.deliveries.every((d) => d.status === 200)).toBe(true);
  });

  it('plan change through the portal flow, a downgrade, then cancellation at period end and the end', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Changer');
    const subId = await subscribe(customerId, tenantId, plans.standard);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'standard');
    expect((await billingState(db, tenantId)).entitlements).toEqual([]);

    await portalChange(customerId, subId, plans.premium);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'premium');
    expect((await billingState(db, tenantId)).entitlements).toEqual([{ product_key: 'core', tier: 'enterprise', source: 'plan' }]);

    await portalChange(customerId, subId, plans.standard);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'standard');
    expect((await billingState(db, tenantId)).entitlements).toEqual([]);

    await stripe.subscriptions.update(subId, { cancel_at_period_end: true });
    await fake.settled();
    await waitFor(async () => (await billingState(db, tenantId)).subscriptions[0]?.cancel_at_period_end === true);
    const pending = await billingState(db, tenantId);
    expect(pending.plan).toBe('standard'); // paid until the period ends
    expect(pending.status).toBe('active');

    await stripe.subscriptions.cancel(subId);
    await fake.settled();
    const ended = await waitFor(async () => {
      const s = await billingState(db, tenantId);
      return s.status === 'canceled' ? s : undefined;
    });
    expect(ended.plan).toBe('free');
  });

  it('an admin-granted entitlement survives a plan that grants and then stops granting the same product', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Granted');
    await db.query(`INSERT INTO entitlements (tenant_id, product_key, tier, source) VALUES ($1, 'core', 'enterprise_plus_suite', 'admin')`, [tenantId]);
    const subId = await subscribe(customerId, tenantId, plans.premium);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'premium');
    await stripe.subscriptions.cancel(subId);
    await fake.settled();
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'free');
    expect((await billingState(db, tenantId)).entitlements).toEqual([{ product_key: 'core', tier: 'enterprise_plus_suite', source: 'admin' }]);
  });

  it('a duplicated webhook is processed once: a credit purchase credits the balance and the ledger once', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Credits');
    const session = await createCreditsCheckout(db, stripe, tenantId, customerId, 2500);
    fake.completeCheckout(session.id);
    await fake.settled();
    await waitFor(async () => (await billingState(db, tenantId)).balance > 0);
    const completed = fake.eventsOfType('checkout.session.completed').find((e) => (e['data'] as { object: { id: string } }).object.id === session.id)!;
    // Stripe redelivers; twice more, at once.
    await Promise.all([fake.redeliver(completed['id'] as string), fake.redeliver(completed['id'] as string)]);
    await waitFor(async () => (await unprocessed()) === 0);
    const state = await billingState(db, tenantId);
    expect(state.balance).toBe(2500 * 10000);
    const ledger = await db.query(`SELECT kind, amount, credits FROM billing_ledger WHERE tenant_id = $1`, [tenantId]);
    expect(ledger.rows).toEqual([{ kind: 'credit_purchase', amount: '2500', credits: String(2500 * 10000) }]);
    const grants = await db.query(`SELECT amount, granted_by FROM credit_grants WHERE tenant_id = $1`, [tenantId]);
    expect(grants.rows).toEqual([{ amount: String(2500 * 10000), granted_by: 'stripe' }]);
    expect((await db.query(`SELECT count(*)::int AS n FROM stripe_events WHERE id = $1`, [completed['id']])).rows[0].n).toBe(1);
    expect(fake.deliveries.filter((d) => d.eventId === completed['id']).map((d) => d.status)).toEqual([200, 200, 200]);
  });

  describe('credits only for Checkout Sessions management-api created, as Stripe says they were paid', () => {
    const post = (body: string) =>
      http(`${worker.url}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': FakeStripe.sign(body, WEBHOOK_SECRET) }, body });
    /** A checkout.session.completed correctly signed with the webhook secret, whatever its body claims. */
    const signedEvent = async (session: Record<string, unknown>) => {
      const id = `evt_${randomBytes(12).toString('hex')}`;
      const body = JSON.stringify({ id, object: 'event', type: 'checkout.session.completed', created: Math.floor(Date.now() / 1000), data: { object: { object: 'checkout.session', ...session } } });
      expect((await post(body)).status).toBe(200);
      await waitFor(async () => Boolean((await db.query(`SELECT processed_at FROM stripe_events WHERE id = $1`, [id])).rows[0]?.processed_at), 10000);
      return id;
    };
    const paidCredits = (id: string, customer: string, tenantId: string, amount = 777_000) => ({
      id,
      mode: 'payment',
      status: 'complete',
      payment_status: 'paid',
      amount_total: amount,
      currency: 'usd',
      customer,
      client_reference_id: tenantId,
      created: Math.floor(Date.now() / 1000),
      metadata: { kind: 'credits', tenantId, productKey: 'core' },
    });
    let warn: jest.SpyInstance;
    beforeEach(() => (warn = jest.spyOn(Logger.prototype, 'warn')));
    afterEach(() => warn.mockRestore());
    const warned = () => warn.mock.calls.map((c) => String(c[0])).join('\n');

    it('a signed event for a session Stripe never had mints nothing; the event is processed and the refusal logged', async () => {
      const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Mint');
      await signedEvent(paidCredits('cs_test_neverMinted', customerId, tenantId));
      expect((await billingState(db, tenantId)).balance).toBe(0);
      expect((await db.query(`SELECT count(*)::int AS n FROM billing_ledger WHERE tenant_id = $1`, [tenantId])).rows[0].n).toBe(0);
      expect(warned()).toContain('cs_test_neverMinted: Stripe has no such session; no credits granted');
    });

    it('a real paid session that management-api did not record (made with the key elsewhere, or for another tenant) mints nothing', async () => {
      const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Unrecorded');
      const session = await stripe.checkout.sessions.create({
        mode: 'payment',
        customer: customerId,
        line_items: [{ price_data: { currency: 'usd', unit_amount: 5000, product_data: { name: 'credits' } }, quantity: 1 }],
        success_url: 'https://app.test/done',
        metadata: { tenantId, productKey: 'core', kind: 'credits' },
      });
      // Recorded, but for another tenant: the customer's tenant is what counts.
      const other = await createTenantWithCustomer(db, stripe, 'Bystander');
      await db.query(`INSERT INTO checkout_sessions (stripe_session_id, tenant_id, product_key, kind, amount, currency) VALUES ($1, $2, 'core', 'credits', 5000, 'usd')`, [session.id, other.tenantId]);
      fake.completeCheckout(session.id);
      await fake.settled();
      await waitFor(async () => (await unprocessed()) === 0);
      expect((await billingState(db, tenantId)).balance).toBe(0);
      expect((await billingState(db, other.tenantId)).balance).toBe(0);
      expect(warned()).toContain(`checkout ${session.id}: not a credit purchase management-api created for tenant ${tenantId}`);
    });

    it('the event body is not believed: an open (unpaid) session claimed paid mints nothing; once paid it mints what was recorded, once, however the event is replayed', async () => {
      const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Inflated');
      const session = await createCreditsCheckout(db, stripe, tenantId, customerId, 1500);
      // Claimed paid, for far more, while Stripe has it open and unpaid.
      const early = await signedEvent(paidCredits(session.id, customerId, tenantId, 7_770_000));
      expect((await billingState(db, tenantId)).balance).toBe(0);
      fake.completeCheckout(session.id);
      await fake.settled();
      await waitFor(async () => (await billingState(db, tenantId)).balance > 0);
      // The forged body again, and a replay of it under a new event id: still the recorded 1,500 cents, once.
      await signedEvent(paidCredits(session.id, customerId, tenantId, 7_770_000));
      await post(JSON.stringify({ id: early, object: 'event', type: 'checkout.session.completed', created: Math.floor(Date.now() / 1000), data: { object: paidCredits(session.id, customerId, tenantId, 7_770_000) } }));
      await waitFor(async () => (await unprocessed()) === 0);
      expect((await billingState(db, tenantId)).balance).toBe(1500 * 10000);
      const ledger = await db.query(`SELECT kind, amount, credits FROM billing_ledger WHERE tenant_id = $1`, [tenantId]);
      expect(ledger.rows).toEqual([{ kind: 'credit_purchase', amount: '1500', credits: String(1500 * 10000) }]);
    });

    it('upgrade: a paid session created before sessions were recorded is judged by Stripe alone (its tenant in metadata and customer)', async () => {
      const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Upgrade');
      const unrecorded = (metadataTenant: string) =>
        stripe.checkout.sessions.create({
          mode: 'payment',
          customer: customerId,
          line_items: [{ price_data: { currency: 'usd', unit_amount: 700, product_data: { name: 'credits' } }, quantity: 1 }],
          success_url: 'https://app.test/done',
          metadata: { tenantId: metadataTenant, productKey: 'core', kind: 'credits' },
        });
      const since = (await db.query(`SELECT value FROM billing_state WHERE key = 'checkout_sessions_recorded_since'`)).rows[0].value as string;
      expect(Number(since)).toBeGreaterThan(0);
      // As if these sessions had been opened just before the upgrade.
      await db.query(`UPDATE billing_state SET value = $1 WHERE key = 'checkout_sessions_recorded_since'`, [String(Math.floor(Date.now() / 1000) + 600)]);
      try {
        const other = await createTenantWithCustomer(db, stripe, 'Elsewhere');
        const mislabelled = await unrecorded(other.tenantId);
        const genuine = await unrecorded(tenantId);
        fake.completeCheckout(mislabelled.id);
        fake.completeCheckout(genuine.id);
        await fake.settled();
        await waitFor(async () => (await unprocessed()) === 0);
        expect((await billingState(db, tenantId)).balance).toBe(700 * 10000);
        expect((await billingState(db, other.tenantId)).balance).toBe(0);
      } finally {
        await db.query(`UPDATE billing_state SET value = $1 WHERE key = 'checkout_sessions_recorded_since'`, [since]);
      }
    });

    it('a session is capped at the amount management-api recorded for it', async () => {
      const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Capped');
      const session = await createCreditsCheckout(db, stripe, tenantId, customerId, 900);
      await db.query(`UPDATE checkout_sessions SET amount = 600 WHERE tenant_id = $1 AND stripe_session_id = $2`, [tenantId, session.id]);
      fake.completeCheckout(session.id);
      await fake.settled();
      await waitFor(async () => (await billingState(db, tenantId)).balance > 0);
      expect((await billingState(db, tenantId)).balance).toBe(600 * 10000);
      expect(warned()).toContain(`checkout ${session.id}: amount_total 900 differs from the 600 recorded`);
    });
  });

  it('a forged signature is refused with 400 and changes nothing', async () => {
    const { tenantId } = await createTenantWithCustomer(db, stripe, 'Forged');
    const forged = JSON.stringify({
      id: 'evt_forged',
      object: 'event',
      type: 'checkout.session.completed',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'cs_forged', object: 'checkout.session', mode: 'payment', payment_status: 'paid', amount_total: 100000, currency: 'usd', customer: 'cus_x', metadata: { kind: 'credits', tenantId } } },
    });
    const post = (body: string, signature?: string) =>
      http(`${worker.url}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', ...(signature ? { 'stripe-signature': signature } : {}) }, body });
    const wrongSecret = await post(forged, FakeStripe.sign(forged, 'whsec_attacker'));
    expect(wrongSecret.status).toBe(400);
    expect(wrongSecret.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(wrongSecret.body).toMatchObject({ type: '/problems/bad-signature', status: 400 });
    // A genuine signature over other bytes: the body was altered (one space) after signing.
    expect((await post(` ${forged}`, FakeStripe.sign(forged, WEBHOOK_SECRET))).status).toBe(400);
    // A genuine signature too old to be a delivery (replayed).
    expect((await post(forged, FakeStripe.sign(forged, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 3600))).status).toBe(400);
    expect((await post(forged)).status).toBe(400);
    expect((await db.query(`SELECT id FROM stripe_events WHERE id = 'evt_forged'`)).rows).toEqual([]);
    expect((await billingState(db, tenantId)).balance).toBe(0);
    // The same bytes correctly signed are accepted (so the refusals above were the signature's doing).
    const genuine = await post(forged, FakeStripe.sign(forged, WEBHOOK_SECRET));
    expect(genuine.status).toBe(200);
    const metrics = await http<string>(`${worker.metricsUrl}/metrics`);
    expect(metrics.body).toMatch(/billing_webhooks_total\{outcome="bad-signature"[^}]*\} 4/);
  });

  it('refuses a signed body that is not a Stripe event, and an oversize body, with 4xx problems, never 500', async () => {
    const post = (body: string) =>
      http(`${worker.url}/webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': FakeStripe.sign(body, WEBHOOK_SECRET) }, body });
    for (const body of ['not json', '[]', '{"id":"evt_1","type":"x"}', JSON.stringify({ id: "evt_'; DROP", type: 'x', created: 1, data: { object: {} } }), '{"a":"\u0000"}']) {
      const res = await post(body);
      expect([body, res.status]).toEqual([body, 400]);
      expect(res.body).toMatchObject({ status: 400 });
    }
    const nul = JSON.stringify({ id: 'evt_nul', type: 'customer.updated', created: 1, data: { object: { name: 'a\u0000b' } } });
    expect((await post(nul)).status).toBe(400);
    const big = JSON.stringify({ id: 'evt_big', type: 'x', created: 1, data: { object: { pad: 'x'.repeat(1100 * 1024) } } });
    expect((await post(big)).status).toBe(413);
    expect((await db.query(`SELECT id FROM stripe_events WHERE id IN ('evt_1', 'evt_big', 'evt_nul')`)).rows).toEqual([]);
  });

  it('a failed renewal: the invoice goes to the ledger as payment_failed, the subscription past_due, the plan held', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Declined');
    const subId = await subscribe(customerId, tenantId, plans.premium);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'premium');
    const invoice = fake.failPayment(subId);
    await fake.settled();
    const state = await waitFor(async () => {
      const s = await billingState(db, tenantId);
      return s.status === 'past_due' ? s : undefined;
    });
    expect(state.plan).toBe('premium');
    expect(state.entitlements).toEqual([{ product_key: 'core', tier: 'enterprise', source: 'plan' }]);
    const ledger = await waitFor(async () => (await db.query(`SELECT kind, amount, stripe_subscription_id FROM billing_ledger WHERE stripe_object_id = $1`, [invoice['id']])).rows[0]);
    expect(ledger).toEqual({ kind: 'invoice_payment_failed', amount: '4900', stripe_subscription_id: subId });
  });

  it('events delivered out of order leave the final state right (subscriptions are re-read from Stripe)', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Shuffled');
    const subId = await subscribe(customerId, tenantId, plans.standard);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'standard');
    fake.deliverWebhooks = false;
    const from = fake.events.length;
    await portalChange(customerId, subId, plans.premium);
    await stripe.subscriptions.update(subId, { cancel_at_period_end: true });
    await portalChange(customerId, subId, plans.standard);
    await portalChange(customerId, subId, plans.premium);
    fake.deliverWebhooks = true;
    const events = fake.events.slice(from);
    expect(events.length).toBe(4);
    for (const e of [...events].reverse()) await fake.redeliver(e['id'] as string);
    await waitFor(async () => (await unprocessed()) === 0);
    const state = await billingState(db, tenantId);
    expect(state.plan).toBe('premium');
    expect(state.subscriptions[0]).toMatchObject({ plan: 'premium', cancel_at_period_end: true });
    expect(state.entitlements).toEqual([{ product_key: 'core', tier: 'enterprise', source: 'plan' }]);
  });

  it('Stripe down: webhooks are still acknowledged and stored, and processed once Stripe is back', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Outage');
    const subId = await subscribe(customerId, tenantId, plans.standard);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'standard');
    fake.deliverWebhooks = false;
    const from = fake.events.length;
    await portalChange(customerId, subId, plans.premium);
    fake.deliverWebhooks = true;
    await fake.setMode('refuse');
    for (const e of fake.events.slice(from)) await fake.redeliver(e['id'] as string);
    expect(fake.deliveries.slice(-1)[0].status).toBe(200);
    await new Promise((r) => setTimeout(r, 700));
    expect(await unprocessed()).toBeGreaterThan(0);
    expect((await billingState(db, tenantId)).plan).toBe('standard');
    const failed = await db.query(`SELECT attempts, last_error FROM stripe_events WHERE processed_at IS NULL`);
    expect(failed.rows[0].attempts).toBeGreaterThan(0);
    await fake.setMode('up');
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'premium', 15000);
    await waitFor(async () => (await unprocessed()) === 0, 15000);
  });

  it('catches up on events its webhooks missed by listing them from Stripe', async () => {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, 'Missed');
    fake.deliverWebhooks = false;
    try {
      await subscribe(customerId, tenantId, plans.premium);
    } finally {
      fake.deliverWebhooks = true;
    }
    await new Promise((r) => setTimeout(r, 300));
    expect((await billingState(db, tenantId)).plan).toBe('free');
    const fresh = await worker.app.get(StripeEventsCatchUpService).catchUp();
    expect(fresh).toBeGreaterThan(0);
    await waitFor(async () => (await billingState(db, tenantId)).plan === 'premium');
    // Listing again stores nothing twice.
    expect(await worker.app.get(StripeEventsCatchUpService).catchUp()).toBe(0);
  });
});
