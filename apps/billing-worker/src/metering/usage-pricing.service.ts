import { Inject, Injectable, Logger } from '@nestjs/common';
import Stripe from 'stripe';
import { BILLING_STATE, BillingRepository } from '@flagship/billing';
import { APP_CONFIG } from '@flagship/config';
import type { Tx as EntityManager } from '@flagship/persistence';
import type { BillingWorkerConfig } from '../env.schema';
import { StripeAccount } from '../stripe/stripe-account';
import { BillingSyncRepository } from '../webhooks/billing-sync.repository';

/** The meter event payload keys the reporter sends (UsageMeterService) and the meter reads. */
export const METER_PAYLOAD_KEYS = { customer: 'stripe_customer_id', value: 'value' } as const;

export interface UsagePricing {
  meterId: string;
  priceId: string;
}

/** A usage subscription: every item on a metered price (a plan subscription has one licensed item). */
export function isUsageSubscription(sub: Stripe.Subscription): boolean {
  return sub.items.data.length > 0 && sub.items.data.every((i) => i.price.recurring?.usage_type === 'metered');
}

const ENDED = new Set(['canceled', 'incomplete_expired']);

/**
 * What makes reported usage billable at Stripe: meter events only aggregate on a billing meter with
 * their `event_name`, a meter bills only through a price with `recurring.usage_type=metered` and
 * `recurring.meter`, and that price only through a subscription of the customer. The plan
 * subscription stays single-item (the portal's `subscription_update_confirm` flow refuses others), so
 * each tenant's customer per product key gets its own usage subscription on the metered price.
 *
 * Nothing is created twice across restarts and replicas: the meter is found again by its event name
 * (Stripe keeps one active meter per event name), the price by its lookup key, a usage subscription
 * by our record, else by listing the customer's subscriptions on the price; creations carry
 * idempotency keys, and replicas creating one customer's subscription take turns on an advisory lock.
 */
@Injectable()
export class UsagePricingService {
  private readonly log = new Logger(UsagePricingService.name);
  private known: Promise<UsagePricing> | undefined;
  private inFlight: Promise<UsagePricing> | undefined;

  constructor(
    private readonly stripe: StripeAccount,
    @Inject(APP_CONFIG) private readonly config: Pick<BillingWorkerConfig, 'METER_EVENT_NAME' | 'METER_PRICE_CURRENCY' | 'METER_PRICE_UNIT_AMOUNT_DECIMAL'>,
    private readonly billing: BillingRepository,
    private readonly locks: BillingSyncRepository,
  ) {}

  get lookupKey(): string {
    return `flagship-usage-${this.config.METER_EVENT_NAME}`;
  }

  /** The meter and metered price, as last made sure of (made sure of now when not yet). */
  pricing(): Promise<UsagePricing> {
    this.known ??= this.ensure().catch((err: unknown) => {
      this.known = undefined;
      throw err;
    });
    return this.known;
  }

  /** Finds or creates the meter and the metered price on it (at start-up and daily); callers at once share one pass. */
  ensure(): Promise<UsagePricing> {
    this.inFlight ??= this.lookUpOrCreate().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async lookUpOrCreate(): Promise<UsagePricing> {
    const meter = await this.ensureMeter();
    const price = await this.ensurePrice(meter);
    await this.billing.setState(BILLING_STATE.usageMeterId, meter.id);
    await this.billing.setState(BILLING_STATE.usagePriceId, price.id);
    const pricing = { meterId: meter.id, priceId: price.id };
    this.known = Promise.resolve(pricing);
    return pricing;
  }

  private async ensureMeter(): Promise<Stripe.Billing.Meter> {
    let meter = await this.stripe.activeMeter(this.config.METER_EVENT_NAME);
    if (!meter) {
      try {
        meter = await this.stripe.createMeter(
          {
            display_name: 'Flagship AI gateway usage',
            event_name: this.config.METER_EVENT_NAME,
            default_aggregation: { formula: 'sum' },
            customer_mapping: { type: 'by_id', event_payload_key: METER_PAYLOAD_KEYS.customer },
            value_settings: { event_payload_key: METER_PAYLOAD_KEYS.value },
          },
          `flagship-meter-${this.config.METER_EVENT_NAME}`,
        );
        this.log.log(`billing meter ${meter.id} (${meter.event_name}) created`);
      } catch (err) {
        // Another replica created it after our look (past the idempotency key's 24 h): find it again.
        meter = await this.stripe.activeMeter(this.config.METER_EVENT_NAME);
        if (!meter) throw err;
      }
    }
    // Stripe lets a meter's payload keys never change: a meter made otherwise cannot read our events.
    if (meter.customer_mapping.event_payload_key !== METER_PAYLOAD_KEYS.customer || meter.value_settings.event_payload_key !== METER_PAYLOAD_KEYS.value) {
      throw new Error(
        `billing meter ${meter.id} for ${meter.event_name} reads payload keys ${meter.customer_mapping.event_payload_key}/${meter.value_settings.event_payload_key}, not ${METER_PAYLOAD_KEYS.customer}/${METER_PAYLOAD_KEYS.value}: deactivate it or set METER_EVENT_NAME to another name`,
      );
    }
    return meter;
  }

  private async ensurePrice(meter: Stripe.Billing.Meter): Promise<Stripe.Price> {
    const { METER_PRICE_CURRENCY: currency, METER_PRICE_UNIT_AMOUNT_DECIMAL: unitAmountDecimal } = this.config;
    const existing = await this.stripe.activePrice(this.lookupKey);
    const fits = (p: Stripe.Price) =>
      p.recurring?.usage_type === 'metered' && p.recurring.meter === meter.id && p.currency === currency && Number(String(p.unit_amount_decimal)) === Number(unitAmountDecimal);
    if (existing && fits(existing)) return existing;
    const product =
      typeof existing?.product === 'string'
        ? existing.product
        : (await this.stripe.createProduct({ name: 'Flagship AI gateway usage', metadata: { managedBy: 'flagship-billing-worker' } }, `flagship-usage-product-${meter.id}`)).id;
    // A price that no longer fits (another meter, amount or currency) hands its lookup key over.
    const price = await this.stripe.createPrice(
      {
        product,
        currency,
        unit_amount_decimal: Stripe.Decimal.from(unitAmountDecimal),
        recurring: { interval: 'month', usage_type: 'metered', meter: meter.id },
        lookup_key: this.lookupKey,
        transfer_lookup_key: existing !== null,
        nickname: 'AI gateway usage (metered)',
        metadata: { managedBy: 'flagship-billing-worker' },
      },
      `flagship-usage-price-${meter.id}-${currency}-${unitAmountDecimal}-${existing?.id ?? 'first'}`,
    );
    this.log.log(`metered price ${price.id} on meter ${meter.id} created`);
    return price;
  }

  /**
   * The usage subscription of one tenant's customer for a product key, created on first need, inside
   * the meter batch's transaction `m` (callers take customers in a stable order: the locks never cross).
   */
  async ensureSubscription(m: EntityManager, customer: { tenantId: string; productKey: string; stripeCustomerId: string }): Promise<string> {
    const recorded = await this.billing.usageSubscriptionId(customer.tenantId, customer.productKey, m);
    if (recorded) return recorded;
    await this.locks.lock(m, `usage-subscription:${customer.stripeCustomerId}`);
    const meanwhile = await this.billing.usageSubscriptionId(customer.tenantId, customer.productKey, m);
    if (meanwhile) return meanwhile;
    const { priceId } = await this.pricing();
    // One created before its record was committed (a crash in between) is found, not doubled.
    const listed = await this.stripe.subscriptionsOn(customer.stripeCustomerId, priceId);
    const found = listed.find((s) => !ENDED.has(s.status));
    const sub =
      found ??
      (await this.stripe.createSubscription(
        { customer: customer.stripeCustomerId, items: [{ price: priceId }], metadata: { tenantId: customer.tenantId, productKey: customer.productKey, kind: 'usage' } },
        // Numbered by the ended ones: a replacement for a canceled subscription is not a replay of the first.
        `flagship-usage-subscription-${customer.stripeCustomerId}-${priceId}-${listed.length}`,
      ));
    if (!found) this.log.log(`usage subscription ${sub.id} for tenant ${customer.tenantId} (${customer.productKey}) created`);
    await this.billing.setUsageSubscriptionId(m, customer.tenantId, customer.productKey, sub.id);
    return sub.id;
  }

  /** A usage subscription Stripe ended (canceled in the portal, say) is forgotten: the next report subscribes again. */
  async subscriptionChanged(m: EntityManager, tenantId: string, sub: Stripe.Subscription): Promise<void> {
    if (ENDED.has(sub.status)) await this.billing.clearUsageSubscriptionId(m, tenantId, sub.id);
  }
}
