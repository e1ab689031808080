import Stripe from 'stripe';
import { isStripeUnavailable, StripeApi } from '@flagship/billing';
import { describeAgreement, FakeStripe } from '@flagship/testing';
import { FakeStripeAccount } from '../testing/stripe-account.fake';
import { SdkStripeAccount, type StripeAccount } from './stripe-account';

const API_KEY = 'sk_test_account_port';

/**
 * The same cases against the real port (the stripe SDK, here on libs/testing's fake Stripe over
 * HTTP) and its in-memory twin, so the unit specs of the billing sync and the metering, which run on
 * the twin, prove what the SDK would do. What a customer does on Stripe's pages (paying, refunding,
 * disputing) each side does with its own hands.
 */
describe('StripeAccount: the in-memory twin agrees with the SDK on the fake Stripe', () => {
  let http: FakeStripe;

  beforeAll(async () => {
    http = await FakeStripe.start({ apiKey: API_KEY });
  });
  afterAll(async () => {
    await http?.close();
  });

  interface Hands {
    account: StripeAccount;
    customer: () => Promise<string>;
    planPrice: (amount: number) => Promise<Stripe.Price>;
    subscribe: (customer: string, price: Stripe.Price) => Promise<string>;
    /** A Checkout Session in payment mode; paid: with its payment intent and charge. */
    session: (customer: string, amount: number, paid: boolean) => Promise<{ sessionId: string; chargeId?: string; paymentIntent?: string }>;
    refund: (chargeId: string, amount: number) => Promise<void>;
    dispute: (chargeId: string) => Promise<void>;
    down: (on: boolean) => Promise<void>;
  }

  const sdk = (): Hands => {
    const stripe = http.client(API_KEY);
    const account = new SdkStripeAccount(new StripeApi({ get: (name) => (name === 'STRIPE_SECRET_KEY' ? API_KEY : undefined) }, { apiBase: http.url, maxNetworkRetries: 0, timeoutMs: 3000 }));
    return {
      account,
      customer: async () => (await stripe.customers.create({ name: 'Acme' })).id,
      planPrice: async (amount) => stripe.prices.create({ product: (await stripe.products.create({ name: 'Plan' })).id, currency: 'usd', unit_amount: amount, recurring: { interval: 'month' } }),
      subscribe: async (customer, price) => (await stripe.subscriptions.create({ customer, items: [{ price: price.id }] })).id,
      session: async (customer, amount, paid) => {
        const s = await stripe.checkout.sessions.create({
          mode: 'payment',
          customer,
          line_items: [{ price_data: { currency: 'usd', unit_amount: amount, product_data: { name: 'credits' } }, quantity: 1 }],
          success_url: 'https://app.test/done',
          metadata: { kind: 'credits' },
        });
        if (!paid) return { sessionId: s.id };
        const done = http.completeCheckout(s.id);
        const paymentIntent = done['payment_intent'] as string;
        const [charge] = (await stripe.charges.list({ payment_intent: paymentIntent })).data;
        return { sessionId: s.id, chargeId: charge!.id, paymentIntent };
      },
      refund: async (charge, amount) => void (await stripe.refunds.create({ charge, amount })),
      dispute: async (chargeId) => void http.openDispute(chargeId),
      down: (on) => http.setMode(on ? 'error' : 'up'),
    };
  };
  const twin = (): Hands => {
    const account = new FakeStripeAccount();
    return {
      account,
      customer: async () => account.addCustomer({ name: 'Acme' }).id,
      planPrice: async (amount) => account.addPrice({ currency: 'usd', unit_amount: amount, recurring: { interval: 'month' } }),
      subscribe: async (customer, price) => account.addSubscription({ customer, prices: [price] }).id,
      session: async (customer, amount, paid) => {
        const s = account.addPaymentSession({ customer, amount, metadata: { kind: 'credits' } });
        if (!paid) return { sessionId: s.id };
        const { session, charge } = account.pay(s.id);
        return { sessionId: s.id, chargeId: charge.id, paymentIntent: session.payment_intent as string };
      },
      refund: async (charge, amount) => void account.refund(charge, amount),
      dispute: async (chargeId) => void account.openDispute(chargeId),
      down: async (on) => void (account.down = on),
    };
  };

  describeAgreement({ 'the SDK on the fake Stripe': sdk, 'the in-memory twin': twin }, (subject) => {
    let h: Hands;
    let a: StripeAccount;
    let n = 0;
    beforeEach(() => {
      h = subject();
      a = h.account;
      n++;
    });

    it('reads of what Stripe does not have answer null (or nothing)', async () => {
      expect(await a.subscription('sub_nope')).toBeNull();
      expect(await a.checkoutSession('cs_test_nope')).toBeNull();
      expect(await a.charge('ch_nope')).toBeNull();
      expect(await a.disputes('ch_nope')).toEqual([]);
      expect(await a.sessionOfPaymentIntent('pi_nope')).toBeNull();
      expect(await a.activeMeter(`no_such_event_${n}`)).toBeNull();
      expect(await a.activePrice(`no-such-lookup-${n}`)).toBeNull();
    });

    it('a credit purchase as billing-worker reads it: the session open then paid, its charge, refunds and disputes, and the session found from its payment intent', async () => {
      const customer = await h.customer();
      const open = await h.session(customer, 2500, false);
      expect(await a.checkoutSession(open.sessionId)).toMatchObject({ id: open.sessionId, mode: 'payment', status: 'open', payment_status: 'unpaid', amount_total: 2500, customer });
      const paid = await h.session(customer, 1500, true);
      expect(await a.checkoutSession(paid.sessionId)).toMatchObject({
        mode: 'payment',
        status: 'complete',
        payment_status: 'paid',
        amount_total: 1500,
        currency: 'usd',
        customer,
        payment_intent: paid.paymentIntent,
        metadata: { kind: 'credits' },
      });
      expect(await a.charge(paid.chargeId!)).toMatchObject({ id: paid.chargeId, amount: 1500, amount_refunded: 0, customer, payment_intent: paid.paymentIntent });
      expect(await a.sessionOfPaymentIntent(paid.paymentIntent!)).toBe(paid.sessionId);
      await h.refund(paid.chargeId!, 500);
      await h.refund(paid.chargeId!, 250);
      expect((await a.charge(paid.chargeId!))?.amount_refunded).toBe(750);
      expect(await a.disputes(paid.chargeId!)).toEqual([]);
      await h.dispute(paid.chargeId!);
      expect(await a.disputes(paid.chargeId!)).toEqual([expect.objectContaining({ charge: paid.chargeId, amount: 1500, status: 'needs_response' })]);
    });

    it('a plan subscription as billing-worker reads it, and listed by customer and price', async () => {
      const customer = await h.customer();
      const price = await h.planPrice(1900);
      const id = await h.subscribe(customer, price);
      const sub = await a.subscription(id);
      expect(sub).toMatchObject({ id, customer, status: 'active', cancel_at_period_end: false, created: expect.any(Number) });
      expect(sub!.items.data).toEqual([
        expect.objectContaining({ id: expect.any(String), price: expect.objectContaining({ id: price.id, recurring: expect.objectContaining({ usage_type: 'licensed' }) }), current_period_start: expect.any(Number), current_period_end: expect.any(Number) }),
      ]);
      expect(sub!.items.data[0]!.current_period_end - sub!.items.data[0]!.current_period_start).toBeGreaterThan(27 * 86_400);
      expect((await a.subscriptionsOn(customer, price.id)).map((s) => s.id)).toEqual([id]);
      expect(await a.subscriptionsOn(customer, (await h.planPrice(4900)).id)).toEqual([]);
    });

    it('the meter and its metered price: created once per idempotency key, one active meter per event name, the lookup key handed over', async () => {
      const eventName = `usage_${n}_${Date.now()}`;
      const params: Stripe.Billing.MeterCreateParams = {
        display_name: 'Usage',
        event_name: eventName,
        default_aggregation: { formula: 'sum' },
        customer_mapping: { type: 'by_id', event_payload_key: 'stripe_customer_id' },
        value_settings: { event_payload_key: 'value' },
      };
      const meter = await a.createMeter(params, `meter-${eventName}`);
      expect(meter).toMatchObject({ event_name: eventName, status: 'active', customer_mapping: { event_payload_key: 'stripe_customer_id' }, value_settings: { event_payload_key: 'value' } });
      expect((await a.createMeter(params, `meter-${eventName}`)).id).toBe(meter.id);
      await expect(a.createMeter(params, `meter-${eventName}-again`)).rejects.toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
      expect((await a.activeMeter(eventName))?.id).toBe(meter.id);

      const lookup = `usage-${eventName}`;
      const product = await a.createProduct({ name: 'Usage' }, `product-${eventName}`);
      expect((await a.createProduct({ name: 'Usage' }, `product-${eventName}`)).id).toBe(product.id);
      const priceParams = (amount: string, transfer: boolean): Stripe.PriceCreateParams => ({
        product: product.id,
        currency: 'usd',
        unit_amount_decimal: Stripe.Decimal.from(amount),
        recurring: { interval: 'month', usage_type: 'metered', meter: meter.id },
        lookup_key: lookup,
        transfer_lookup_key: transfer,
      });
      const first = await a.createPrice(priceParams('0.0001', false), `price-${eventName}-1`);
      expect(first).toMatchObject({ product: product.id, currency: 'usd', lookup_key: lookup, recurring: { usage_type: 'metered', meter: meter.id } });
      expect(String(first.unit_amount_decimal)).toBe('0.0001');
      expect((await a.createPrice(priceParams('0.0001', false), `price-${eventName}-1`)).id).toBe(first.id);
      await expect(a.createPrice(priceParams('0.0002', false), `price-${eventName}-1`)).rejects.toBeInstanceOf(Stripe.errors.StripeError);
      await expect(a.createPrice(priceParams('0.0002', false), `price-${eventName}-2`)).rejects.toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
      expect((await a.activePrice(lookup))?.id).toBe(first.id);
      const second = await a.createPrice(priceParams('0.0002', true), `price-${eventName}-3`);
      expect((await a.activePrice(lookup))?.id).toBe(second.id);
    });

    it("a customer made once per idempotency key, subscribed to the metered price; meter events taken once per identifier, within Stripe's 35 days", async () => {
      const eventName = `usage_sub_${n}_${Date.now()}`;
      const meter = await a.createMeter(
        { display_name: 'Usage', event_name: eventName, default_aggregation: { formula: 'sum' }, customer_mapping: { type: 'by_id', event_payload_key: 'stripe_customer_id' }, value_settings: { event_payload_key: 'value' } },
        `m-${eventName}`,
      );
      const product = await a.createProduct({ name: 'Usage' }, `p-${eventName}`);
      const price = await a.createPrice({ product: product.id, currency: 'usd', unit_amount_decimal: Stripe.Decimal.from('0.0001'), recurring: { interval: 'month', usage_type: 'metered', meter: meter.id } }, `pr-${eventName}`);
      const customer = await a.createCustomer({ name: 'Acme', metadata: { tenantId: 't-1' } }, `c-${eventName}`);
      expect((await a.createCustomer({ name: 'Acme', metadata: { tenantId: 't-1' } }, `c-${eventName}`)).id).toBe(customer.id);
      const sub = await a.createSubscription({ customer: customer.id, items: [{ price: price.id }], metadata: { kind: 'usage' } }, `s-${eventName}`);
      expect(sub).toMatchObject({ customer: customer.id, status: 'active', metadata: { kind: 'usage' } });
      expect(sub.items.data.map((i) => [i.price.id, i.price.recurring?.usage_type, i.quantity])).toEqual([[price.id, 'metered', undefined]]);
      expect((await a.subscriptionsOn(customer.id, price.id)).map((s) => s.id)).toEqual([sub.id]);

      const event = (identifier: string, timestamp = Math.floor(Date.now() / 1000)): Stripe.Billing.MeterEventCreateParams => ({
        event_name: eventName,
        identifier,
        timestamp,
        payload: { stripe_customer_id: customer.id, value: '120' },
      });
      expect(await a.sendMeterEvent(event(`row-${eventName}`))).toBe('accepted');
      expect(await a.sendMeterEvent(event(`row-${eventName}`))).toBe('duplicate');
      await expect(a.sendMeterEvent(event(`old-${eventName}`, Math.floor(Date.now() / 1000) - 40 * 86_400))).rejects.toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    });

    it('Stripe down: every call fails as isStripeUnavailable recognises', async () => {
      await h.down(true);
      try {
        for (const call of [() => a.subscription('sub_1'), () => a.activeMeter('x'), () => a.createCustomer({ name: 'x' }, `down-${n}`), () => a.sendMeterEvent({ event_name: 'x', payload: { stripe_customer_id: 'cus_1', value: '1' } })]) {
          const err = await call().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(isStripeUnavailable(err)).toBe(true);
        }
      } finally {
        await h.down(false);
      }
    });
  });
});
