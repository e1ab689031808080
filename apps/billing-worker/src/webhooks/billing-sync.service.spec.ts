import { Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import { BILLING_STATE, BillingRepository } from '@flagship/billing';
import { type BillingWorld, billingWorld, MICRO_CREDITS_PER_CENT } from '../testing/billing-world';
import { FAKE_TX } from '@flagship/persistence/testing';
import { StripeAccount } from '../stripe/stripe-account';
import { BillingSyncRepository } from './billing-sync.repository';
import { StripeEventsRepository } from './stripe-events.repository';
import { FakeStripeEventsRepository } from './stripe-events.repository.fake';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER = '00000000-0000-4000-8000-0000000000b2';

/** An invoice as Stripe sends it in invoice.* events (since API version 2025-03-31 its subscription is under parent). */
const invoice = (o: { id: string; customer: string; subscription?: string; amountPaid?: number; amountDue?: number; created?: number }) =>
  ({
    id: o.id,
    object: 'invoice',
    customer: o.customer,
    currency: 'usd',
    amount_paid: o.amountPaid ?? 0,
    amount_due: o.amountDue ?? 0,
    created: o.created ?? 1_767_225_600,
    parent: o.subscription ? { type: 'subscription_details', subscription_details: { subscription: o.subscription } } : null,
  }) as unknown as Stripe.Invoice;

/** The session as a checkout.session.* event carries it: a pointer, believed in nothing but its id and mode. */
const sessionEvent = (s: Partial<Stripe.Checkout.Session>) => ({ object: 'checkout.session', ...s }) as Stripe.Checkout.Session;

describe('BillingSyncService', () => {
  let w: BillingWorld;
  let customer: string;
  let warn: jest.SpyInstance;
  const warned = () => warn.mock.calls.map((c) => String(c[0])).join('\n');
  const entitlements = (t = TENANT) => w.sync.entitlements.filter((e) => e.tenantId === t).map((e) => [e.productKey, e.tier, e.source]);
  const plan = (t = TENANT) => [w.sync.tenants.get(t)!.plan, w.sync.tenants.get(t)!.subscriptionStatus];

  beforeEach(async () => {
    w = billingWorld();
    customer = await w.tenantWithCustomer(TENANT);
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('the fakes are the ports', () => {
    expect(w.stripe).toBeInstanceOf(StripeAccount);
    expect(w.billing).toBeInstanceOf(BillingRepository);
    expect(w.sync).toBeInstanceOf(BillingSyncRepository);
    expect(new FakeStripeEventsRepository()).toBeInstanceOf(StripeEventsRepository);
  });

  describe('subscriptions: plan and entitlements', () => {
    it("premium: the plan, its enterprise entitlement for core, and the subscription as Stripe has it (period from its item); under the subscription's lock", async () => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
      expect(await w.service.syncSubscription(FAKE_TX, sub.id)).toEqual([TENANT]);
      expect(plan()).toEqual(['premium', 'active']);
      expect(entitlements()).toEqual([['core', 'enterprise', 'plan']]);
      const item = sub.items.data[0]!;
      expect(await w.billing.currentSubscription(TENANT, 'core')).toEqual({
        stripeSubscriptionId: sub.id,
        tenantId: TENANT,
        productKey: 'core',
        stripeCustomerId: customer,
        stripeItemId: item.id,
        priceId: w.plans.premium.id,
        plan: 'premium',
        status: 'active',
        currentPeriodStart: new Date(item.current_period_start * 1000),
        currentPeriodEnd: new Date(item.current_period_end * 1000),
        cancelAtPeriodEnd: false,
        stripeCreated: sub.created,
      });
      expect(w.sync.locks).toEqual([`subscription:${sub.id}`]);
    });

    it('up and down the plans: standard grants nothing, premium grants core, back to standard takes it away', async () => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.standard] });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect([plan(), entitlements()]).toEqual([['standard', 'active'], []]);
      w.stripe.changeSubscription(sub.id, { price: w.plans.premium });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect([plan(), entitlements()]).toEqual([['premium', 'active'], [['core', 'enterprise', 'plan']]]);
      w.stripe.changeSubscription(sub.id, { price: w.plans.standard });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect([plan(), entitlements()]).toEqual([['standard', 'active'], []]);
    });

    it.each([
      ['active', 'premium'],
      ['trialing', 'premium'],
      ['past_due', 'premium'],
      ['canceled', 'free'],
      ['unpaid', 'free'],
      ['incomplete', 'free'],
      ['incomplete_expired', 'free'],
      ['paused', 'free'],
    ] as const)('a premium subscription %s: plan %s', async (status, expected) => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium], status });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect(plan()).toEqual([expected, status]);
      expect(entitlements()).toEqual(expected === 'premium' ? [['core', 'enterprise', 'plan']] : []);
    });

    it('cancelling at period end keeps the plan until Stripe ends the subscription', async () => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      w.stripe.changeSubscription(sub.id, { cancelAtPeriodEnd: true });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect([plan(), (await w.billing.currentSubscription(TENANT, 'core'))?.cancelAtPeriodEnd]).toEqual([['premium', 'active'], true]);
      w.stripe.changeSubscription(sub.id, { status: 'canceled' });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect([plan(), entitlements()]).toEqual([['free', 'canceled'], []]);
    });

    it('the live subscription decides when a newer one has ended', async () => {
      const live = w.stripe.addSubscription({ customer, prices: [w.plans.standard], created: 1_000 });
      const ended = w.stripe.addSubscription({ customer, prices: [w.plans.premium], created: 2_000, status: 'canceled' });
      await w.service.syncSubscription(FAKE_TX, live.id);
      await w.service.syncSubscription(FAKE_TX, ended.id);
      expect(plan()).toEqual(['standard', 'active']);
    });

    it('a price that is no plan price counts as free', async () => {
      const odd = w.stripe.addPrice({ currency: 'usd', unit_amount: 999, recurring: { interval: 'month' } });
      const sub = w.stripe.addSubscription({ customer, prices: [odd] });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect(plan()).toEqual(['free', 'active']);
      expect((await w.billing.currentSubscription(TENANT, 'core'))?.plan).toBeNull();
    });

    it('an entitlement an admin granted survives a plan that grants, then stops granting, the same product', async () => {
      w.sync.entitlements.push({ tenantId: TENANT, productKey: 'core', tier: 'enterprise_plus_suite', source: 'admin' });
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      w.stripe.changeSubscription(sub.id, { status: 'canceled' });
      await w.service.syncSubscription(FAKE_TX, sub.id);
      expect(entitlements()).toEqual([['core', 'enterprise_plus_suite', 'admin']]);
    });

    it("events out of order leave Stripe's current state: every event re-reads the subscription", async () => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.standard] });
      w.stripe.changeSubscription(sub.id, { price: w.plans.premium });
      w.stripe.changeSubscription(sub.id, { cancelAtPeriodEnd: true });
      // The newest event first, then the two older ones it replaced: each reads the same truth.
      for (let i = 0; i < 3; i++) await w.service.syncSubscription(FAKE_TX, sub.id);
      expect(plan()).toEqual(['premium', 'active']);
      expect(await w.billing.currentSubscription(TENANT, 'core')).toMatchObject({ plan: 'premium', cancelAtPeriodEnd: true });
      expect(w.stripe.count('subscription')).toBe(3);
    });

    it("a subscription of another product's customer is recorded, and leaves the tenant's plan alone", async () => {
      const insights = await w.tenantWithCustomer(TENANT, 'insights');
      const sub = w.stripe.addSubscription({ customer: insights, prices: [w.plans.premium] });
      expect(await w.service.syncSubscription(FAKE_TX, sub.id)).toEqual([TENANT]);
      expect(await w.billing.currentSubscription(TENANT, 'insights')).toMatchObject({ plan: 'premium', productKey: 'insights' });
      expect([plan(), entitlements()]).toEqual([['free', 'active'], []]);
    });

    it("ignores a subscription Stripe no longer has, and one whose customer is none of ours", async () => {
      expect(await w.service.syncSubscription(FAKE_TX, 'sub_gone')).toEqual([]);
      const stranger = w.stripe.addCustomer({ name: 'Elsewhere' });
      const sub = w.stripe.addSubscription({ customer: stranger.id, prices: [w.plans.premium] });
      expect(await w.service.syncSubscription(FAKE_TX, sub.id)).toEqual([]);
      expect(w.billing.subscriptions.size).toBe(0);
      expect(plan()).toEqual(['free', 'active']);
      expect(warned()).toMatch(/sub_gone no longer exists at Stripe[\s\S]*belongs to no tenant; ignored/);
    });

    it('a usage subscription (metered) is no plan: it never sets plan or entitlements; ended, it is forgotten so the next report subscribes again', async () => {
      const { priceId } = await w.pricing.pricing();
      const metered = w.stripe.prices.get(priceId)!;
      const usage = w.stripe.addSubscription({ customer, prices: [metered] });
      await w.billing.setUsageSubscriptionId(FAKE_TX, TENANT, 'core', usage.id);
      expect(await w.service.syncSubscription(FAKE_TX, usage.id)).toEqual([]);
      expect([plan(), entitlements(), w.billing.subscriptions.size]).toEqual([['free', 'active'], [], 0]);
      expect(await w.billing.usageSubscriptionId(TENANT, 'core')).toBe(usage.id);
      w.stripe.changeSubscription(usage.id, { status: 'canceled' });
      await w.service.syncSubscription(FAKE_TX, usage.id);
      expect(await w.billing.usageSubscriptionId(TENANT, 'core')).toBeNull();
    });
  });

  describe('Checkout: credits only for sessions management-api recorded, as Stripe says they were paid', () => {
    const recordCredits = (sessionId: string, amount: number, tenantId = TENANT, currency = 'usd') =>
      w.billing.recordCheckoutSession({ stripeSessionId: sessionId, tenantId, productKey: 'core', kind: 'credits', amount, currency, planId: null, createdBy: null });
    const completed = (id: string) => sessionEvent({ id, mode: 'payment', metadata: { kind: 'credits' } });

    it('a paid recorded session credits its tenant once, into the ledger per product key, and is kept for refunds', async () => {
      const s = w.stripe.addPaymentSession({ customer, amount: 2500, metadata: { kind: 'credits', tenantId: TENANT }, paid: true });
      await recordCredits(s.id, 2500);
      expect(await w.service.checkoutCompleted(FAKE_TX, completed(s.id))).toEqual([TENANT]);
      expect(w.credits.grants).toEqual([{ tenantId: TENANT, amount: 2500 * MICRO_CREDITS_PER_CENT, reason: `stripe checkout ${s.id}`, grantedBy: 'stripe' }]);
      expect(w.sync.ledger).toEqual([
        { tenantId: TENANT, productKey: 'core', kind: 'credit_purchase', stripeObjectId: s.id, stripeSubscriptionId: null, amount: 2500, currency: 'usd', credits: 25_000_000, occurredAt: new Date(s.created * 1000) },
      ]);
      expect(w.purchases.purchases.get(s.id)).toMatchObject({ tenantId: TENANT, stripePaymentIntentId: w.stripe.sessions.get(s.id)!.payment_intent, amount: 2500, credits: 25_000_000 });
      // checkout.session.async_payment_succeeded, a redelivery, a catch-up: nothing more.
      expect(await w.service.checkoutCompleted(FAKE_TX, completed(s.id))).toEqual([]);
      expect(w.credits.grants).toHaveLength(1);
    });

    it('the event body is not believed: a session Stripe does not have, or has open and unpaid, grants nothing', async () => {
      await recordCredits('cs_test_forged', 2500);
      expect(await w.service.checkoutCompleted(FAKE_TX, sessionEvent({ id: 'cs_test_forged', mode: 'payment', status: 'complete', payment_status: 'paid', amount_total: 777_000, metadata: { kind: 'credits' } }))).toEqual([]);
      const open = w.stripe.addPaymentSession({ customer, amount: 2500, metadata: { kind: 'credits' } });
      await recordCredits(open.id, 2500);
      expect(await w.service.checkoutCompleted(FAKE_TX, completed(open.id))).toEqual([]);
      expect([w.credits.grants, w.sync.ledger]).toEqual([[], []]);
      expect(warned()).toContain('cs_test_forged: Stripe has no such session; no credits granted');
      // Paid later, it grants what was recorded.
      w.stripe.pay(open.id);
      expect(await w.service.checkoutCompleted(FAKE_TX, completed(open.id))).toEqual([TENANT]);
      expect(w.credits.grants.map((g) => g.amount)).toEqual([25_000_000]);
    });

    it("grants nothing for a session management-api did not record for the customer's tenant, in another currency, or of a customer none of ours", async () => {
      const unrecorded = w.stripe.addPaymentSession({ customer, amount: 5000, metadata: { kind: 'credits', tenantId: TENANT }, paid: true });
      const othersRecord = w.stripe.addPaymentSession({ customer, amount: 5000, metadata: { kind: 'credits', tenantId: TENANT }, paid: true });
      w.sync.seedTenant(OTHER);
      await recordCredits(othersRecord.id, 5000, OTHER);
      const euros = w.stripe.addPaymentSession({ customer, amount: 5000, currency: 'eur', metadata: { kind: 'credits' }, paid: true });
      await recordCredits(euros.id, 5000, TENANT, 'usd');
      const stranger = w.stripe.addPaymentSession({ customer: w.stripe.addCustomer().id, amount: 5000, metadata: { kind: 'credits' }, paid: true });
      await recordCredits(stranger.id, 5000);
      for (const s of [unrecorded, othersRecord, euros, stranger]) expect(await w.service.checkoutCompleted(FAKE_TX, completed(s.id))).toEqual([]);
      expect([w.credits.grants, w.sync.ledger]).toEqual([[], []]);
      expect(warned()).toContain(`checkout ${unrecorded.id}: not a credit purchase management-api created for tenant ${TENANT}`);
    });

    it('grants for the lesser of what was paid and what was recorded', async () => {
      const more = w.stripe.addPaymentSession({ customer, amount: 900, metadata: { kind: 'credits' }, paid: true });
      await recordCredits(more.id, 600);
      const less = w.stripe.addPaymentSession({ customer, amount: 400, metadata: { kind: 'credits' }, paid: true });
      await recordCredits(less.id, 600);
      await w.service.checkoutCompleted(FAKE_TX, completed(more.id));
      await w.service.checkoutCompleted(FAKE_TX, completed(less.id));
      expect(w.credits.grants.map((g) => g.amount)).toEqual([600 * MICRO_CREDITS_PER_CENT, 400 * MICRO_CREDITS_PER_CENT]);
      expect(warned()).toContain(`checkout ${more.id}: amount_total 900 differs from the 600 recorded; granting for the lesser`);
    });

    it('a session from before sessions were recorded is judged by Stripe alone: its metadata must name the tenant its customer belongs to', async () => {
      const before = 2_000_000_000;
      await w.billing.setState(BILLING_STATE.checkoutSessionsRecordedSince, String(before));
      const genuine = w.stripe.addPaymentSession({ customer, amount: 700, metadata: { kind: 'credits', tenantId: TENANT }, paid: true, created: before - 60 });
      const mislabelled = w.stripe.addPaymentSession({ customer, amount: 700, metadata: { kind: 'credits', tenantId: OTHER }, paid: true, created: before - 60 });
      const afterwards = w.stripe.addPaymentSession({ customer, amount: 700, metadata: { kind: 'credits', tenantId: TENANT }, paid: true, created: before + 60 });
      expect(await w.service.checkoutCompleted(FAKE_TX, completed(genuine.id))).toEqual([TENANT]);
      expect(await w.service.checkoutCompleted(FAKE_TX, completed(mislabelled.id))).toEqual([]);
      expect(await w.service.checkoutCompleted(FAKE_TX, completed(afterwards.id))).toEqual([]);
      expect(w.credits.grants.map((g) => [g.tenantId, g.amount])).toEqual([[TENANT, 700 * MICRO_CREDITS_PER_CENT]]);
    });

    it('a subscription checkout syncs the subscription it made; other payments are not asked of Stripe', async () => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
      expect(await w.service.checkoutCompleted(FAKE_TX, sessionEvent({ id: 'cs_sub', mode: 'subscription', subscription: sub.id }))).toEqual([TENANT]);
      expect(plan()).toEqual(['premium', 'active']);
      expect(await w.service.checkoutCompleted(FAKE_TX, sessionEvent({ id: 'cs_other', mode: 'payment', metadata: { kind: 'donation' } }))).toEqual([]);
      expect(await w.service.checkoutCompleted(FAKE_TX, sessionEvent({ id: 'cs_setup', mode: 'setup' }))).toEqual([]);
      expect(w.stripe.count('checkoutSession')).toBe(0);
    });
  });

  describe('invoices: the billing ledger per product key', () => {
    it("a paid invoice goes to the ledger (amount paid, its subscription) once, and its subscription is synced", async () => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
      const paid = invoice({ id: 'in_1', customer, subscription: sub.id, amountPaid: 4900, amountDue: 4900, created: 1_767_225_600 });
      expect(await w.service.invoice(FAKE_TX, paid, 'invoice_paid')).toEqual([TENANT]);
      expect(await w.service.invoice(FAKE_TX, paid, 'invoice_paid')).toEqual([TENANT]);
      expect(w.sync.ledger).toEqual([
        { tenantId: TENANT, productKey: 'core', kind: 'invoice_paid', stripeObjectId: 'in_1', stripeSubscriptionId: sub.id, amount: 4900, currency: 'usd', credits: 0, occurredAt: new Date(1_767_225_600_000) },
      ]);
      expect(plan()).toEqual(['premium', 'active']);
    });

    it("a failed payment records the amount due; the subscription (past_due) keeps its plan", async () => {
      const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
      w.stripe.changeSubscription(sub.id, { status: 'past_due' });
      await w.service.invoice(FAKE_TX, invoice({ id: 'in_2', customer, subscription: sub.id, amountDue: 4900 }), 'invoice_payment_failed');
      expect(w.sync.ledger.map((e) => [e.kind, e.amount])).toEqual([['invoice_payment_failed', 4900]]);
      expect(plan()).toEqual(['premium', 'past_due']);
    });

    it("each product key's customer has its own ledger; an invoice of no subscription, or of a customer none of ours", async () => {
      const insights = await w.tenantWithCustomer(TENANT, 'insights');
      expect(await w.service.invoice(FAKE_TX, invoice({ id: 'in_3', customer: insights, amountPaid: 100 }), 'invoice_paid')).toEqual([TENANT]);
      expect(await w.service.invoice(FAKE_TX, invoice({ id: 'in_4', customer: 'cus_stranger', amountPaid: 100 }), 'invoice_paid')).toEqual([]);
      expect(w.sync.ledger.map((e) => [e.stripeObjectId, e.productKey, e.stripeSubscriptionId])).toEqual([['in_3', 'insights', null]]);
    });
  });

  describe('refunds and disputes (the rules are CreditReversalsService\'s): the charge is re-read from Stripe', () => {
    it('a refund of a credit purchase takes its share back once; a charge Stripe does not have, nothing', async () => {
      const s = w.stripe.addPaymentSession({ customer, amount: 2500, metadata: { kind: 'credits' }, paid: true });
      await w.billing.recordCheckoutSession({ stripeSessionId: s.id, tenantId: TENANT, productKey: 'core', kind: 'credits', amount: 2500, currency: 'usd', planId: null, createdBy: null });
      await w.service.checkoutCompleted(FAKE_TX, sessionEvent({ id: s.id, mode: 'payment', metadata: { kind: 'credits' } }));
      const chargeId = [...w.stripe.charges.values()].find((c) => c.payment_intent === w.stripe.sessions.get(s.id)!.payment_intent)!.id;
      w.stripe.refund(chargeId, 1000);
      expect(await w.service.chargeChanged(FAKE_TX, chargeId)).toEqual([TENANT]);
      expect(await w.service.chargeChanged(FAKE_TX, chargeId)).toEqual([]);
      expect(w.purchases.grants.map((g) => g.amount)).toEqual([-10_000_000]);
      w.stripe.openDispute(chargeId, 1500);
      expect(await w.service.chargeChanged(FAKE_TX, chargeId)).toEqual([TENANT]);
      expect(w.purchases.purchases.get(s.id)).toMatchObject({ disputeOpen: true, amountRefunded: 1000, amountDisputed: 1500, creditsTakenBack: 25_000_000 });
      expect(w.sync.locks.filter((l) => l.startsWith('charge:'))).toEqual([`charge:${chargeId}`, `charge:${chargeId}`, `charge:${chargeId}`]);
      expect(await w.service.chargeChanged(FAKE_TX, 'ch_gone')).toEqual([]);
    });

    it('finds a purchase recorded before payment intents were kept through the Checkout Session Stripe lists for it', async () => {
      const s = w.stripe.addPaymentSession({ customer, amount: 500, metadata: { kind: 'credits' }, paid: true });
      const pi = w.stripe.sessions.get(s.id)!.payment_intent as string;
      w.purchases.seed({ stripeSessionId: s.id, tenantId: TENANT, productKey: 'core', stripePaymentIntentId: null, amount: 500, currency: 'usd', credits: 5_000_000 });
      const chargeId = [...w.stripe.charges.values()].find((c) => c.payment_intent === pi)!.id;
      w.stripe.refund(chargeId, 500);
      expect(await w.service.chargeChanged(FAKE_TX, chargeId)).toEqual([TENANT]);
      expect(w.purchases.purchases.get(s.id)).toMatchObject({ stripePaymentIntentId: pi, creditsTakenBack: 5_000_000 });
    });
  });

  it('Stripe down: the error goes to the caller (the inbox retries the event later); nothing is written', async () => {
    const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
    w.stripe.down = true;
    await expect(w.service.syncSubscription(FAKE_TX, sub.id)).rejects.toThrow(/down/);
    await expect(w.service.chargeChanged(FAKE_TX, 'ch_1')).rejects.toThrow(/down/);
    expect(plan()).toEqual(['free', 'active']);
    expect([w.billing.subscriptions.size, w.sync.ledger, w.credits.grants]).toEqual([0, [], []]);
  });
});
