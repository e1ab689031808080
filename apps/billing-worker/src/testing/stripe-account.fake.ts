import Stripe from 'stripe';
import { type MeterEventOutcome, StripeAccount } from '../stripe/stripe-account';

const DAY = 86_400;
const nowS = () => Math.floor(Date.now() / 1000);
/** A deep copy, as a read from Stripe is; Stripe's Decimal values (immutable) are kept as they are. */
function copy<T>(o: T): T {
  if (Array.isArray(o)) return o.map(copy) as T;
  if (o === null || typeof o !== 'object' || Object.getPrototypeOf(o) !== Object.prototype) return o;
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, copy(v)])) as T;
}

type Obj = Record<string, unknown>;

/**
 * In-memory twin of SdkStripeAccount (billing-worker's StripeAccount port) for unit specs: Stripe's
 * objects in maps, no I/O; stripe-account.int-spec.ts runs the same cases against it and the real
 * SDK on libs/testing's fake Stripe, so what the specs prove over it holds over Stripe's API.
 *
 * What a customer does on Stripe's own pages (pays a Checkout Session, is refunded, disputes a
 * charge, changes a subscription) the test does with the helpers below. `calls` records every
 * port call in order; `down` makes every call fail as Stripe unreachable does, and `failing` only
 * the calls it picks (a failure mid-batch).
 */
export class FakeStripeAccount extends StripeAccount {
  readonly subscriptionRows = new Map<string, Stripe.Subscription>();
  readonly sessions = new Map<string, Stripe.Checkout.Session>();
  readonly charges = new Map<string, Stripe.Charge>();
  readonly disputeRows: Stripe.Dispute[] = [];
  readonly meters: Stripe.Billing.Meter[] = [];
  readonly products = new Map<string, Stripe.Product>();
  readonly prices = new Map<string, Stripe.Price>();
  readonly customerRows = new Map<string, Stripe.Customer>();
  /** Meter events Stripe accepted, in order. */
  readonly meterEvents: Stripe.Billing.MeterEventCreateParams[] = [];
  readonly calls: Array<{ method: string; args: unknown[] }> = [];
  down = false;
  failing: ((method: string, args: unknown[]) => boolean) | undefined;
  private readonly replays = new Map<string, { fingerprint: string; result: unknown }>();
  private seq = 0;

  private id(prefix: string): string {
    return `${prefix}_fake${String(++this.seq).padStart(6, '0')}`;
  }

  private call(method: string, ...args: unknown[]): void {
    this.calls.push({ method, args });
    if (this.down || this.failing?.(method, args)) throw new Stripe.errors.StripeConnectionError({ message: `fake Stripe is down (${method})` });
  }

  /** Stripe's idempotency: the same key with the same parameters answers the first result; with others it is refused. */
  private once<T>(key: string, params: unknown, create: () => T): T {
    const fingerprint = JSON.stringify(params);
    const prior = this.replays.get(key);
    if (prior) {
      if (prior.fingerprint !== fingerprint) {
        throw new Stripe.errors.StripeIdempotencyError({ type: 'idempotency_error', message: `Keys for idempotent requests can only be used with the same parameters they were first used with (${key}).` });
      }
      return copy(prior.result as T);
    }
    const result = create();
    this.replays.set(key, { fingerprint, result: copy(result) });
    return copy(result);
  }

  private missing(kind: string, id: string, param = 'id'): never {
    throw new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', statusCode: 404, code: 'resource_missing', param, message: `No such ${kind}: '${id}'` });
  }

  private invalid(message: string, code?: string): never {
    throw new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', statusCode: 400, message, ...(code ? { code } : {}) });
  }

  // ---- the port ----

  async subscription(id: string): Promise<Stripe.Subscription | null> {
    this.call('subscription', id);
    const s = this.subscriptionRows.get(id);
    return s ? copy(s) : null;
  }

  async checkoutSession(id: string): Promise<Stripe.Checkout.Session | null> {
    this.call('checkoutSession', id);
    const s = this.sessions.get(id);
    return s ? copy(s) : null;
  }

  async charge(id: string): Promise<Stripe.Charge | null> {
    this.call('charge', id);
    const c = this.charges.get(id);
    return c ? copy(c) : null;
  }

  async disputes(chargeId: string): Promise<Stripe.Dispute[]> {
    this.call('disputes', chargeId);
    return this.disputeRows.filter((d) => d.charge === chargeId).reverse().slice(0, 100).map(copy);
  }

  async sessionOfPaymentIntent(paymentIntentId: string): Promise<string | null> {
    this.call('sessionOfPaymentIntent', paymentIntentId);
    return [...this.sessions.values()].reverse().find((s) => s.payment_intent === paymentIntentId)?.id ?? null;
  }

  async activeMeter(eventName: string): Promise<Stripe.Billing.Meter | null> {
    this.call('activeMeter', eventName);
    const m = this.meters.find((x) => x.event_name === eventName && x.status === 'active');
    return m ? copy(m) : null;
  }

  async createMeter(params: Stripe.Billing.MeterCreateParams, idempotencyKey: string): Promise<Stripe.Billing.Meter> {
    this.call('createMeter', params, idempotencyKey);
    return this.once(idempotencyKey, params, () => {
      // Stripe's rule: one active meter per event name.
      if (this.meters.some((m) => m.event_name === params.event_name && m.status === 'active')) {
        this.invalid(`An active meter with event_name ${params.event_name} already exists.`, 'resource_already_exists');
      }
      const at = nowS();
      const meter = {
        id: this.id('mtr'),
        object: 'billing.meter',
        created: at,
        updated: at,
        livemode: false,
        display_name: params.display_name,
        event_name: params.event_name,
        event_time_window: null,
        status: 'active',
        status_transitions: { deactivated_at: null },
        default_aggregation: { formula: params.default_aggregation.formula },
        customer_mapping: { type: params.customer_mapping?.type ?? 'by_id', event_payload_key: params.customer_mapping?.event_payload_key ?? 'stripe_customer_id' },
        value_settings: { event_payload_key: params.value_settings?.event_payload_key ?? 'value' },
      } as unknown as Stripe.Billing.Meter;
      this.meters.push(meter);
      return meter;
    });
  }

  async activePrice(lookupKey: string): Promise<Stripe.Price | null> {
    this.call('activePrice', lookupKey);
    const p = [...this.prices.values()].reverse().find((x) => x.lookup_key === lookupKey && x.active);
    return p ? copy(p) : null;
  }

  async createProduct(params: Stripe.ProductCreateParams, idempotencyKey: string): Promise<Stripe.Product> {
    this.call('createProduct', params, idempotencyKey);
    return this.once(idempotencyKey, params, () => {
      const product = { id: this.id('prod'), object: 'product', name: params.name, active: true, created: nowS(), livemode: false, metadata: { ...(params.metadata ?? {}) } } as unknown as Stripe.Product;
      this.products.set(product.id, product);
      return product;
    });
  }

  async createPrice(params: Stripe.PriceCreateParams, idempotencyKey: string): Promise<Stripe.Price> {
    this.call('createPrice', params, idempotencyKey);
    return this.once(idempotencyKey, params, () => this.addPrice(params));
  }

  async createCustomer(params: Stripe.CustomerCreateParams, idempotencyKey: string): Promise<Stripe.Customer> {
    this.call('createCustomer', params, idempotencyKey);
    return this.once(idempotencyKey, params, () => this.addCustomer(params));
  }

  async subscriptionsOn(customerId: string, priceId: string): Promise<Stripe.Subscription[]> {
    this.call('subscriptionsOn', customerId, priceId);
    return [...this.subscriptionRows.values()]
      .filter((s) => s.customer === customerId && s.items.data.some((i) => i.price.id === priceId))
      .reverse()
      .slice(0, 100)
      .map(copy);
  }

  async createSubscription(params: Stripe.SubscriptionCreateParams, idempotencyKey: string): Promise<Stripe.Subscription> {
    this.call('createSubscription', params, idempotencyKey);
    return this.once(idempotencyKey, params, () => {
      const customer = params.customer ?? '';
      if (!this.customerRows.has(customer)) this.missing('customer', customer, 'customer');
      const prices = (params.items ?? []).map((i) => this.prices.get(i.price ?? '') ?? this.missing('price', i.price ?? '', 'price'));
      return this.addSubscription({ customer, prices, metadata: { ...((params.metadata as Record<string, string>) ?? {}) } });
    });
  }

  async sendMeterEvent(params: Stripe.Billing.MeterEventCreateParams): Promise<MeterEventOutcome> {
    this.call('sendMeterEvent', params);
    const ts = params.timestamp ?? nowS();
    // Stripe takes events from the last 35 days up to 5 minutes ahead.
    if (ts < nowS() - 35 * DAY || ts > nowS() + 300) this.invalid('Timestamp must be within the past 35 calendar days or up to 5 minutes in the future.');
    if (params.identifier !== undefined && this.meterEvents.some((e) => e.identifier === params.identifier)) return 'duplicate';
    this.meterEvents.push(copy(params));
    return 'accepted';
  }

  // ---- what happens on Stripe's side: the test's own hands ----

  addCustomer(params: Stripe.CustomerCreateParams = {}): Stripe.Customer {
    const c = { id: this.id('cus'), object: 'customer', created: nowS(), email: params.email ?? null, name: params.name ?? null, metadata: { ...(params.metadata ?? {}) }, livemode: false } as unknown as Stripe.Customer;
    this.customerRows.set(c.id, c);
    return c;
  }

  /** A price, as the operator makes plan prices (licensed) or billing-worker its metered one. */
  addPrice(params: Pick<Stripe.PriceCreateParams, 'currency' | 'recurring' | 'lookup_key' | 'transfer_lookup_key' | 'unit_amount' | 'nickname' | 'metadata'> & { product?: string; unit_amount_decimal?: unknown }): Stripe.Price {
    const product = params.product ?? this.createProductNow();
    if (!this.products.has(product)) this.missing('product', product, 'product');
    const usageType = params.recurring?.usage_type ?? 'licensed';
    if (params.recurring && usageType === 'metered' && !this.meters.some((m) => m.id === params.recurring?.meter && m.status === 'active')) {
      this.missing('billing meter', String(params.recurring.meter), 'recurring[meter]');
    }
    const lookupKey = params.lookup_key ?? null;
    const holder = lookupKey ? [...this.prices.values()].find((p) => p.lookup_key === lookupKey) : undefined;
    if (holder) {
      if (!params.transfer_lookup_key) this.invalid(`A price (\`${holder.id}\`) already uses that lookup key.`);
      (holder as unknown as Obj)['lookup_key'] = null;
    }
    const decimal = params.unit_amount_decimal !== undefined ? String(params.unit_amount_decimal) : String(params.unit_amount ?? 0);
    // The SDK reads decimal fields as Stripe.Decimal.
    const price = {
      id: this.id('price'),
      object: 'price',
      product,
      active: true,
      currency: params.currency,
      unit_amount: Number.isInteger(Number(decimal)) ? Number(decimal) : null,
      unit_amount_decimal: Stripe.Decimal.from(decimal),
      type: params.recurring ? 'recurring' : 'one_time',
      recurring: params.recurring ? { interval: params.recurring.interval, interval_count: 1, usage_type: usageType, meter: params.recurring.meter ?? null, trial_period_days: null } : null,
      lookup_key: lookupKey,
      nickname: params.nickname ?? null,
      metadata: { ...(params.metadata ?? {}) },
      created: nowS(),
      livemode: false,
    } as unknown as Stripe.Price;
    this.prices.set(price.id, price);
    return price;
  }

  private createProductNow(): string {
    const product = { id: this.id('prod'), object: 'product', name: 'Plan', active: true, created: nowS(), livemode: false, metadata: {} } as unknown as Stripe.Product;
    this.products.set(product.id, product);
    return product.id;
  }

  /** A subscription of the customer to the prices, one item each (metered items without a quantity), its period starting now. */
  addSubscription(s: { customer: string; prices: Stripe.Price[]; status?: Stripe.Subscription.Status; metadata?: Record<string, string>; created?: number }): Stripe.Subscription {
    const start = s.created ?? nowS();
    const id = this.id('sub');
    const sub = {
      id,
      object: 'subscription',
      customer: s.customer,
      status: s.status ?? 'active',
      cancel_at_period_end: false,
      created: start,
      start_date: start,
      livemode: false,
      metadata: { ...(s.metadata ?? {}) },
      items: {
        object: 'list',
        has_more: false,
        url: `/v1/subscription_items?subscription=${id}`,
        data: s.prices.map((price) => ({
          id: this.id('si'),
          object: 'subscription_item',
          subscription: id,
          price: copy(price),
          ...(price.recurring?.usage_type === 'metered' ? {} : { quantity: 1 }),
          current_period_start: start,
          current_period_end: start + 30 * DAY,
          created: start,
          metadata: {},
        })),
      },
    } as unknown as Stripe.Subscription;
    this.subscriptionRows.set(id, sub);
    return copy(sub);
  }

  /** The subscription as the customer's changes leave it: another price on its one item, another status, cancellation at period end. */
  changeSubscription(id: string, change: { price?: Stripe.Price; status?: Stripe.Subscription.Status; cancelAtPeriodEnd?: boolean }): Stripe.Subscription {
    const sub = this.subscriptionRows.get(id) ?? this.missing('subscription', id);
    if (change.price) sub.items.data[0]!.price = copy(change.price);
    if (change.status) sub.status = change.status;
    if (change.cancelAtPeriodEnd !== undefined) sub.cancel_at_period_end = change.cancelAtPeriodEnd;
    return copy(sub);
  }

  /**
   * A Checkout Session in payment mode, as management-api creates one for credits; `paid` completes
   * it as the customer paying on Stripe's page does (its payment intent and charge made).
   */
  addPaymentSession(s: { customer: string; amount: number; currency?: string; metadata?: Record<string, string>; paid?: boolean; created?: number }): Stripe.Checkout.Session {
    const id = `cs_test_${this.id('fake')}`;
    const session = {
      id,
      object: 'checkout.session',
      mode: 'payment',
      status: 'open',
      payment_status: 'unpaid',
      customer: s.customer,
      metadata: { ...(s.metadata ?? {}) },
      subscription: null,
      payment_intent: null,
      amount_subtotal: s.amount,
      amount_total: s.amount,
      currency: s.currency ?? 'usd',
      created: s.created ?? nowS(),
      livemode: false,
    } as unknown as Stripe.Checkout.Session;
    this.sessions.set(id, session);
    if (s.paid) this.pay(id);
    return copy(this.sessions.get(id)!);
  }

  /** The customer pays the session: complete and paid, with a payment intent and its charge. */
  pay(sessionId: string): { session: Stripe.Checkout.Session; charge: Stripe.Charge } {
    const session = this.sessions.get(sessionId) ?? this.missing('checkout.session', sessionId);
    const pi = this.id('pi');
    Object.assign(session, { status: 'complete', payment_status: 'paid', payment_intent: pi });
    const charge = {
      id: this.id('ch'),
      object: 'charge',
      amount: session.amount_total,
      amount_refunded: 0,
      currency: session.currency,
      customer: session.customer,
      payment_intent: pi,
      paid: true,
      refunded: false,
      disputed: false,
      status: 'succeeded',
      created: nowS(),
      livemode: false,
      metadata: {},
    } as unknown as Stripe.Charge;
    this.charges.set(charge.id, charge);
    return { session: copy(session), charge: copy(charge) };
  }

  /** A refund of part of a charge (Stripe's `amount_refunded` is cumulative). */
  refund(chargeId: string, amount: number): Stripe.Charge {
    const charge = this.charges.get(chargeId) ?? this.missing('charge', chargeId);
    charge.amount_refunded += amount;
    charge.refunded = charge.amount_refunded === charge.amount;
    return copy(charge);
  }

  /** The cardholder disputes the charge (a chargeback awaiting evidence unless `status` says otherwise). */
  openDispute(chargeId: string, amount?: number, status: Stripe.Dispute.Status = 'needs_response'): Stripe.Dispute {
    const charge = this.charges.get(chargeId) ?? this.missing('charge', chargeId);
    const dispute = { id: this.id('du'), object: 'dispute', amount: amount ?? charge.amount, charge: chargeId, currency: charge.currency, payment_intent: charge.payment_intent, status, created: nowS(), livemode: false, metadata: {} } as unknown as Stripe.Dispute;
    charge.disputed = true;
    this.disputeRows.push(dispute);
    return copy(dispute);
  }

  closeDispute(disputeId: string, status: 'won' | 'lost'): void {
    const d = this.disputeRows.find((x) => x.id === disputeId) ?? this.missing('dispute', disputeId);
    d.status = status;
  }

  /** How many calls of a port method were made. */
  count(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }
}
