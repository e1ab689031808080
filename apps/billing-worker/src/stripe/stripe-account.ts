import { Inject, Injectable } from '@nestjs/common';
import type Stripe from 'stripe';
import { isDuplicateMeterEvent, type StripeApi } from '@flagship/billing';
import { STRIPE_API } from './stripe.tokens';

/** What Stripe answered a meter event: taken now, or taken before under its identifier (delivered either way). */
export type MeterEventOutcome = 'accepted' | 'duplicate';

/**
 * What billing-worker reads and creates in the Stripe account, in Stripe's own shapes: the port its
 * webhook sync and metering call. SdkStripeAccount calls the stripe SDK with the key of the moment;
 * unit specs use FakeStripeAccount (testing/stripe-account.fake.ts), which agrees with it on the same
 * cases (stripe-account.int-spec.ts, through the SDK against libs/testing's fake Stripe).
 *
 * A read of something Stripe does not have answers null; Stripe unreachable, failing or refusing the
 * key throws what isStripeUnavailable recognises. A creation with an idempotency key used before
 * answers what the first one made.
 */
export abstract class StripeAccount {
  abstract subscription(id: string): Promise<Stripe.Subscription | null>;
  abstract checkoutSession(id: string): Promise<Stripe.Checkout.Session | null>;
  abstract charge(id: string): Promise<Stripe.Charge | null>;
  /** A charge's disputes (one page of 100: every one a charge can have). */
  abstract disputes(chargeId: string): Promise<Stripe.Dispute[]>;
  /** The Checkout Session that took a payment intent, if any. */
  abstract sessionOfPaymentIntent(paymentIntentId: string): Promise<string | null>;
  /** The active billing meter on an event name (Stripe keeps one per event name), if any. */
  abstract activeMeter(eventName: string): Promise<Stripe.Billing.Meter | null>;
  abstract createMeter(params: Stripe.Billing.MeterCreateParams, idempotencyKey: string): Promise<Stripe.Billing.Meter>;
  /** The active price holding a lookup key, if any. */
  abstract activePrice(lookupKey: string): Promise<Stripe.Price | null>;
  abstract createProduct(params: Stripe.ProductCreateParams, idempotencyKey: string): Promise<Stripe.Product>;
  abstract createPrice(params: Stripe.PriceCreateParams, idempotencyKey: string): Promise<Stripe.Price>;
  abstract createCustomer(params: Stripe.CustomerCreateParams, idempotencyKey: string): Promise<Stripe.Customer>;
  /** A customer's subscriptions on a price, whatever their status (up to 100). */
  abstract subscriptionsOn(customerId: string, priceId: string): Promise<Stripe.Subscription[]>;
  abstract createSubscription(params: Stripe.SubscriptionCreateParams, idempotencyKey: string): Promise<Stripe.Subscription>;
  abstract sendMeterEvent(params: Stripe.Billing.MeterEventCreateParams): Promise<MeterEventOutcome>;

  /** The shape ensureStripeCustomer (libs/billing) takes, which management-api hands the SDK client itself. */
  readonly customers = {
    create: (params: Stripe.CustomerCreateParams, options: { idempotencyKey: string }): Promise<Stripe.Customer> => this.createCustomer(params, options.idempotencyKey),
  };
}

/** Null for what Stripe answers `resource_missing` about; every other error as thrown. */
async function orMissing<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (err) {
    if ((err as { code?: string }).code === 'resource_missing') return null;
    throw err;
  }
}

@Injectable()
export class SdkStripeAccount extends StripeAccount {
  constructor(@Inject(STRIPE_API) private readonly api: StripeApi) {
    super();
  }

  subscription(id: string): Promise<Stripe.Subscription | null> {
    return orMissing(this.api.client().subscriptions.retrieve(id));
  }

  checkoutSession(id: string): Promise<Stripe.Checkout.Session | null> {
    return orMissing(this.api.client().checkout.sessions.retrieve(id));
  }

  charge(id: string): Promise<Stripe.Charge | null> {
    return orMissing(this.api.client().charges.retrieve(id));
  }

  async disputes(chargeId: string): Promise<Stripe.Dispute[]> {
    return (await this.api.client().disputes.list({ charge: chargeId, limit: 100 })).data;
  }

  async sessionOfPaymentIntent(paymentIntentId: string): Promise<string | null> {
    return (await this.api.client().checkout.sessions.list({ payment_intent: paymentIntentId, limit: 1 })).data[0]?.id ?? null;
  }

  async activeMeter(eventName: string): Promise<Stripe.Billing.Meter | null> {
    for await (const m of this.api.client().billing.meters.list({ status: 'active', limit: 100 })) {
      if (m.event_name === eventName) return m;
    }
    return null;
  }

  createMeter(params: Stripe.Billing.MeterCreateParams, idempotencyKey: string): Promise<Stripe.Billing.Meter> {
    return this.api.client().billing.meters.create(params, { idempotencyKey });
  }

  async activePrice(lookupKey: string): Promise<Stripe.Price | null> {
    return (await this.api.client().prices.list({ lookup_keys: [lookupKey], active: true, limit: 1 })).data[0] ?? null;
  }

  createProduct(params: Stripe.ProductCreateParams, idempotencyKey: string): Promise<Stripe.Product> {
    return this.api.client().products.create(params, { idempotencyKey });
  }

  createPrice(params: Stripe.PriceCreateParams, idempotencyKey: string): Promise<Stripe.Price> {
    return this.api.client().prices.create(params, { idempotencyKey });
  }

  createCustomer(params: Stripe.CustomerCreateParams, idempotencyKey: string): Promise<Stripe.Customer> {
    return this.api.client().customers.create(params, { idempotencyKey });
  }

  async subscriptionsOn(customerId: string, priceId: string): Promise<Stripe.Subscription[]> {
    return (await this.api.client().subscriptions.list({ customer: customerId, price: priceId, status: 'all', limit: 100 })).data;
  }

  createSubscription(params: Stripe.SubscriptionCreateParams, idempotencyKey: string): Promise<Stripe.Subscription> {
    return this.api.client().subscriptions.create(params, { idempotencyKey });
  }

  async sendMeterEvent(params: Stripe.Billing.MeterEventCreateParams): Promise<MeterEventOutcome> {
    try {
      await this.api.client().billing.meterEvents.create(params);
      return 'accepted';
    } catch (err) {
      if (isDuplicateMeterEvent(err)) return 'duplicate';
      throw err;
    }
  }
}
