import { Logger } from '@nestjs/common';
import Stripe from 'stripe';
import { BILLING_STATE } from '@flagship/billing';
import { usagePricingJob } from '../jobs/usage-pricing.job';
import { FAKE_TX } from '@flagship/persistence/testing';
import { type BillingWorld, billingWorld } from '../testing/billing-world';
import type { BillingWorkerConfig } from '../env.schema';
import { isUsageSubscription, METER_PAYLOAD_KEYS, UsagePricingService } from './usage-pricing.service';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const creations = ['createMeter', 'createProduct', 'createPrice', 'createSubscription'];

describe('UsagePricingService: the meter, the metered price and each customer\'s usage subscription, made once', () => {
  let w: BillingWorld;
  let customer: string;
  const made = () => w.stripe.calls.filter((c) => creations.includes(c.method)).map((c) => c.method);
  /** Another replica, or this one restarted: a fresh service over the same Stripe account and database. */
  const replica = (config = w.meterConfig) => new UsagePricingService(w.stripe, config, w.billing, w.sync);

  beforeEach(async () => {
    w = billingWorld({ meterEventName: 'flagship_ai_usage', meterPrice: '0.0001' });
    customer = await w.tenantWithCustomer(TENANT);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('makes a meter on the event name that reads the payload keys the reporter sends, and a metered price on it at the configured unit amount; records both', async () => {
    const { meterId, priceId } = await w.pricing.pricing();
    expect(w.stripe.meters).toEqual([
      expect.objectContaining({
        id: meterId,
        event_name: 'flagship_ai_usage',
        status: 'active',
        default_aggregation: { formula: 'sum' },
        customer_mapping: { type: 'by_id', event_payload_key: METER_PAYLOAD_KEYS.customer },
        value_settings: { event_payload_key: METER_PAYLOAD_KEYS.value },
      }),
    ]);
    const price = w.stripe.prices.get(priceId)!;
    expect(price).toMatchObject({ currency: 'usd', lookup_key: 'flagship-usage-flagship_ai_usage', recurring: { interval: 'month', usage_type: 'metered', meter: meterId } });
    // The price of a usage row: its debit (micro-credits) x the unit amount, in cents; one credit is $1.
    expect(Number(String(price.unit_amount_decimal)) * 1_000_000).toBe(100);
    expect([await w.billing.state(BILLING_STATE.usageMeterId), await w.billing.state(BILLING_STATE.usagePriceId)]).toEqual([meterId, priceId]);
    expect(w.stripe.calls.filter((c) => creations.includes(c.method)).map((c) => [c.method, c.args[1]])).toEqual([
      ['createMeter', 'flagship-meter-flagship_ai_usage'],
      ['createProduct', `flagship-usage-product-${meterId}`],
      ['createPrice', `flagship-usage-price-${meterId}-usd-0.0001-first`],
    ]);
    // Known from then on: no more calls.
    const calls = w.stripe.calls.length;
    expect(await w.pricing.pricing()).toEqual({ meterId, priceId });
    expect(w.stripe.calls).toHaveLength(calls);
  });

  it('a restart or a second replica finds the meter and the price again instead of making them twice; callers at once share one pass', async () => {
    const first = await w.pricing.pricing();
    const again = replica();
    const [a, b] = await Promise.all([again.ensure(), again.ensure()]);
    expect([a, b]).toEqual([first, first]);
    expect(made()).toEqual(['createMeter', 'createProduct', 'createPrice']);
    expect(w.stripe.count('activeMeter')).toBe(2);
  });

  it('another replica making the meter between our look and our create (under its own key): ours is refused, and theirs found again', async () => {
    await w.stripe.createMeter(
      { display_name: 'Flagship AI gateway usage', event_name: 'flagship_ai_usage', default_aggregation: { formula: 'sum' }, customer_mapping: { type: 'by_id', event_payload_key: 'stripe_customer_id' }, value_settings: { event_payload_key: 'value' } },
      'another-replica-yesterday',
    );
    const look = w.stripe.activeMeter.bind(w.stripe);
    let looks = 0;
    w.stripe.activeMeter = async (name) => (looks++ === 0 ? null : look(name));
    expect((await w.pricing.ensure()).meterId).toBe(w.stripe.meters[0]!.id);
    expect(w.stripe.meters).toHaveLength(1);
    expect(made()).toEqual(['createMeter', 'createMeter', 'createProduct', 'createPrice']);
  });

  it('a changed unit amount or currency makes a new price that takes the lookup key over, on the same product', async () => {
    const first = await w.pricing.pricing();
    const repriced = await replica({ ...w.meterConfig, METER_PRICE_UNIT_AMOUNT_DECIMAL: '0.0002' }).ensure();
    expect(repriced.meterId).toBe(first.meterId);
    expect(repriced.priceId).not.toBe(first.priceId);
    const [old, now] = [w.stripe.prices.get(first.priceId)!, w.stripe.prices.get(repriced.priceId)!];
    expect([old.lookup_key, now.lookup_key, now.product]).toEqual([null, 'flagship-usage-flagship_ai_usage', old.product]);
    expect(String(now.unit_amount_decimal)).toBe('0.0002');
    expect(w.stripe.calls.filter((c) => c.method === 'createPrice').map((c) => (c.args[0] as Stripe.PriceCreateParams).transfer_lookup_key)).toEqual([false, true]);
    expect((await replica({ ...w.meterConfig, METER_PRICE_CURRENCY: 'eur', METER_PRICE_UNIT_AMOUNT_DECIMAL: '0.0002' }).ensure()).priceId).not.toBe(repriced.priceId);
  });

  it("refuses a meter on the event name that reads other payload keys (Stripe never changes them), naming what to do", async () => {
    await w.stripe.createMeter(
      { display_name: 'Old', event_name: 'flagship_ai_usage', default_aggregation: { formula: 'sum' }, customer_mapping: { type: 'by_id', event_payload_key: 'customer' }, value_settings: { event_payload_key: 'amount' } },
      'someone-else',
    );
    await expect(w.pricing.pricing()).rejects.toThrow(/reads payload keys customer\/amount.*set METER_EVENT_NAME to another name/);
  });

  it('Stripe down: nothing is made or remembered; the next call makes them', async () => {
    w.stripe.down = true;
    await expect(w.pricing.pricing()).rejects.toThrow(/down/);
    expect(await w.billing.state(BILLING_STATE.usageMeterId)).toBeNull();
    w.stripe.down = false;
    expect((await w.pricing.pricing()).meterId).toBe(w.stripe.meters[0]!.id);
  });

  it('the daily job makes sure of both and never asks for an immediate rerun', async () => {
    const job = usagePricingJob(w.pricing, { USAGE_PRICING_INTERVAL_S: 86_400 } as BillingWorkerConfig);
    expect([job.name, job.intervalMs]).toEqual(['usage-pricing', 86_400_000]);
    expect(await job.run(new AbortController().signal)).toBe(false);
    expect(w.stripe.meters).toHaveLength(1);
  });

  describe("a customer's usage subscription", () => {
    const owner = () => ({ tenantId: TENANT, productKey: 'core', stripeCustomerId: customer });

    it('made on first need, on the metered price alone (the plan subscription stays single-item), under the customer\'s lock, and recorded; then read from the record', async () => {
      const { priceId } = await w.pricing.pricing();
      const id = await w.pricing.ensureSubscription(FAKE_TX, owner());
      const sub = w.stripe.subscriptionRows.get(id)!;
      expect(sub.items.data.map((i) => i.price.id)).toEqual([priceId]);
      expect(sub.metadata).toEqual({ tenantId: TENANT, productKey: 'core', kind: 'usage' });
      expect(isUsageSubscription(sub)).toBe(true);
      expect(w.sync.locks).toEqual([`usage-subscription:${customer}`]);
      expect(w.stripe.calls.find((c) => c.method === 'createSubscription')?.args[1]).toBe(`flagship-usage-subscription-${customer}-${priceId}-0`);
      expect(await w.billing.usageSubscriptionId(TENANT, 'core')).toBe(id);
      const calls = w.stripe.calls.length;
      expect(await w.pricing.ensureSubscription(FAKE_TX, owner())).toBe(id);
      expect(w.stripe.calls).toHaveLength(calls);
    });

    it('one made before its record was committed (a crash in between) is found, not doubled; an ended one is replaced under a new idempotency key', async () => {
      const { priceId } = await w.pricing.pricing();
      const orphan = w.stripe.addSubscription({ customer, prices: [w.stripe.prices.get(priceId)!] });
      expect(await w.pricing.ensureSubscription(FAKE_TX, owner())).toBe(orphan.id);
      expect(w.stripe.count('createSubscription')).toBe(0);
      // Stripe ends it (canceled in the portal): the webhook forgets it, the next report makes another.
      w.stripe.changeSubscription(orphan.id, { status: 'canceled' });
      await w.pricing.subscriptionChanged(FAKE_TX, TENANT, w.stripe.subscriptionRows.get(orphan.id)!);
      const replacement = await w.pricing.ensureSubscription(FAKE_TX, owner());
      expect(replacement).not.toBe(orphan.id);
      expect(w.stripe.calls.find((c) => c.method === 'createSubscription')?.args[1]).toBe(`flagship-usage-subscription-${customer}-${priceId}-1`);
    });

    it.each([
      ['canceled', null],
      ['incomplete_expired', null],
      ['past_due', 'kept'],
      ['active', 'kept'],
    ] as const)('a usage subscription %s: its record is %s', async (status, expected) => {
      await w.billing.setUsageSubscriptionId(FAKE_TX, TENANT, 'core', 'sub_usage');
      await w.pricing.subscriptionChanged(FAKE_TX, TENANT, { id: 'sub_usage', status } as Stripe.Subscription);
      expect(await w.billing.usageSubscriptionId(TENANT, 'core')).toBe(expected === null ? null : 'sub_usage');
    });

    it('is a usage subscription only when every item is metered', () => {
      const item = (usage: 'metered' | 'licensed') => ({ price: { recurring: { usage_type: usage } } });
      const sub = (...items: ReturnType<typeof item>[]) => ({ items: { data: items } }) as unknown as Stripe.Subscription;
      expect([isUsageSubscription(sub(item('metered'))), isUsageSubscription(sub(item('metered'), item('licensed'))), isUsageSubscription(sub(item('licensed'))), isUsageSubscription(sub())]).toEqual([
        true,
        false,
        false,
        false,
      ]);
    });
  });
});
