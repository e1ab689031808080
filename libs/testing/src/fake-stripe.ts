import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import Stripe from 'stripe';
import { dialHost } from './http';
import { type FormValue, parseStripeForm } from './stripe-form';

/**
 * A local Stripe API speaking Stripe's own protocol, for tests and `npm start`: form-encoded
 * requests, Stripe's JSON objects, list envelopes and error shapes, `Idempotency-Key` replay,
 * events delivered to a webhook URL signed like Stripe signs them. Drive it with the real `stripe`
 * SDK (`new Stripe(key, fake.clientOptions())`).
 *
 * The shapes follow the API version of stripe-node 18 and later: a subscription's period dates
 * live on its items, an invoice names its subscription under `parent.subscription_details`.
 */
type Obj = Record<string, unknown>;
type Params = Record<string, FormValue>;

export interface FakeStripeRequest {
  method: string;
  path: string;
  params: Params;
  idempotencyKey?: string;
  status: number;
}

export interface FakeMeterEvent {
  event_name: string;
  identifier: string;
  payload: Record<string, string>;
  timestamp: number;
  created: number;
}

export interface FakeWebhookDelivery {
  eventId: string;
  type: string;
  status: number | 'error';
}

/** `up`; `error`: every API call answers 500 api_error; `refuse`: the port refuses connections. */
export type FakeStripeMode = 'up' | 'error' | 'refuse';

class StripeError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code?: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

const DAY = 86400;
const RESOURCE_WORDS = new Set([
  'customers',
  'products',
  'prices',
  'checkout',
  'sessions',
  'billing_portal',
  'configurations',
  'subscriptions',
  'invoices',
  'events',
  'billing',
  'meter_events',
  'meters',
  'charges',
  'refunds',
  'disputes',
  'close',
]);
/** Dispute statuses after which the dispute is over (Stripe's `charge.dispute.closed`). */
const CLOSED_DISPUTE = new Set(['won', 'lost', 'warning_closed', 'prevented']);
const now = (): number => Math.floor(Date.now() / 1000);
const str = (v: FormValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
const obj = (v: FormValue | undefined): Record<string, FormValue> => (v && typeof v === 'object' && !Array.isArray(v) ? v : {});
const arr = (v: FormValue | undefined): FormValue[] => (Array.isArray(v) ? v.filter((x) => x !== undefined) : v && typeof v === 'object' ? Object.values(v) : []);
const bool = (v: FormValue | undefined): boolean | undefined => (v === 'true' ? true : v === 'false' ? false : undefined);
const strings = (v: FormValue | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(obj(v)).filter((e): e is [string, string] => typeof e[1] === 'string'));

function required(params: Params, name: string): string {
  const v = str(params[name]);
  if (v === undefined || v === '') throw new StripeError(400, 'invalid_request_error', `Missing required param: ${name}.`, 'parameter_missing', name);
  return v;
}

function integer(v: FormValue | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^-?\d+$/.test(v)) throw new StripeError(400, 'invalid_request_error', `Invalid integer: ${String(v)}`, 'parameter_invalid_integer', name);
  return Number(v);
}

export class FakeStripe {
  readonly apiKeys = new Set<string>();
  /** Signing secrets, the first signs (a rotation puts the new one first). */
  webhookSecrets: string[] = [];
  webhookUrl: string | undefined;
  /** Events are created but not delivered while false (a worker that was down). */
  deliverWebhooks = true;
  mode: FakeStripeMode = 'up';
  /** Added before every API answer (a slow Stripe; lets a test stop a worker mid-batch). */
  delayMs = 0;

  readonly requests: FakeStripeRequest[] = [];
  readonly meterEvents: FakeMeterEvent[] = [];
  readonly deliveries: FakeWebhookDelivery[] = [];
  readonly events: Obj[] = [];

  readonly customers = new Map<string, Obj>();
  readonly products = new Map<string, Obj>();
  readonly prices = new Map<string, Obj>();
  readonly checkoutSessions = new Map<string, Obj>();
  readonly portalSessions = new Map<string, Obj>();
  readonly portalConfigurations = new Map<string, Obj>();
  readonly subscriptions = new Map<string, Obj>();
  readonly meters = new Map<string, Obj>();
  readonly invoices = new Map<string, Obj>();
  readonly charges = new Map<string, Obj>();
  readonly refunds = new Map<string, Obj>();
  readonly disputes = new Map<string, Obj>();
  private readonly idempotency = new Map<string, { fingerprint: string; status: number; body: string }>();
  private readonly sockets = new Set<Socket>();
  private pendingDeliveries = new Set<Promise<void>>();
  private server: Server;

  private constructor(
    readonly port: number,
    readonly host: string,
    private readonly publicBase: string | undefined,
  ) {
    this.server = this.makeServer();
  }

  /**
   * Starts on `port` (0: a free one), bound to `host` (default loopback; 0.0.0.0 in a container).
   * `publicUrl`: where a browser reaches the hosted Checkout and portal pages, when that is not the
   * address the API is called at (a container network: the apps call http://fake-stripe:12111, the
   * browser opens http://localhost:12111).
   */
  static async start(options: { port?: number; host?: string; publicUrl?: string; apiKey?: string; webhookUrl?: string; webhookSecret?: string } = {}): Promise<FakeStripe> {
    const host = options.host ?? '127.0.0.1';
    const fake = new FakeStripe(options.port ?? 0, host, options.publicUrl?.replace(/\/+$/, ''));
    await fake.listen(options.port ?? 0);
    fake.apiKeys.add(options.apiKey ?? 'sk_test_fake');
    fake.webhookUrl = options.webhookUrl;
    if (options.webhookSecret) fake.webhookSecrets = [options.webhookSecret];
    return fake;
  }

  private boundPort = 0;

  private async listen(port: number): Promise<void> {
    this.server.listen(port, this.host);
    await once(this.server, 'listening');
    this.boundPort = (this.server.address() as { port: number }).port;
  }

  /** The API's address from this machine. */
  get url(): string {
    return `http://${dialHost(this.host)}:${this.boundPort}`;
  }

  /** The base of the Checkout and portal page links (`url` unless `publicUrl` was given). */
  get publicUrl(): string {
    return this.publicBase ?? this.url;
  }

  /** Options for `new Stripe(key, ...)`: this fake instead of api.stripe.com. */
  clientOptions(): { host: string; port: number; protocol: 'http' } {
    return { host: dialHost(this.host), port: this.boundPort, protocol: 'http' };
  }

  /** A real stripe-node client pointed here. */
  client(apiKey = [...this.apiKeys][0]): Stripe {
    return new Stripe(apiKey, { ...this.clientOptions(), maxNetworkRetries: 0 });
  }

  /** Stripe down (`error`: 500s; `refuse`: connections refused) or back up. */
  async setMode(mode: FakeStripeMode): Promise<void> {
    if (mode === this.mode) return;
    const wasRefusing = this.mode === 'refuse';
    this.mode = mode;
    if (mode === 'refuse') {
      for (const s of this.sockets) s.destroy();
      await new Promise<void>((r) => this.server.close(() => r()));
    } else if (wasRefusing) {
      this.server = this.makeServer();
      await this.listen(this.boundPort);
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pendingDeliveries]);
    if (this.mode === 'refuse') return;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** Waits until every webhook delivery started so far has been answered. */
  async settled(): Promise<void> {
    while (this.pendingDeliveries.size > 0) await Promise.allSettled([...this.pendingDeliveries]);
  }

  // ---- test controls: what a customer does on Stripe's pages ----

  /** The customer pays on the hosted Checkout page: Stripe's objects and events follow. */
  completeCheckout(sessionId: string): Obj {
    const session = this.checkoutSessions.get(sessionId);
    if (!session) throw new Error(`no checkout session ${sessionId}`);
    if (session['status'] !== 'open') throw new Error(`checkout session ${sessionId} is ${String(session['status'])}`);
    let customerId = session['customer'] as string | null;
    if (!customerId) {
      const c = this.createCustomer({ email: (session['customer_email'] as string | null) ?? undefined });
      customerId = c['id'] as string;
      session['customer'] = customerId;
    }
    const lineItems = session['_line_items'] as Array<{ price: Obj; quantity: number }>;
    session['status'] = 'complete';
    if (session['mode'] === 'subscription') {
      const sub = this.createSubscription(customerId, lineItems, obj(session['_subscription_metadata'] as FormValue));
      session['subscription'] = sub['id'];
      session['payment_status'] = (session['amount_total'] as number) > 0 ? 'paid' : 'no_payment_required';
      this.emit('customer.subscription.created', sub);
      const invoice = this.createInvoice(sub, 'paid');
      session['invoice'] = invoice['id'];
      this.emit('invoice.paid', invoice);
    } else {
      session['payment_status'] = 'paid';
      session['payment_intent'] = `pi_${randomBytes(12).toString('hex')}`;
      this.createCharge(session['payment_intent'] as string, customerId, session['amount_total'] as number, session['currency'] as string);
    }
    this.emit('checkout.session.completed', this.view(session));
    return this.view(session);
  }

  /**
   * The cardholder disputes a charge with their bank: a dispute (by default a chargeback awaiting
   * evidence, `needs_response`, of the whole amount) and `charge.dispute.created`.
   */
  openDispute(chargeId: string, options: { amount?: number; reason?: string; status?: string } = {}): Obj {
    const charge = this.charges.get(chargeId);
    if (!charge) throw new Error(`no charge ${chargeId}`);
    const status = options.status ?? 'needs_response';
    const created = now();
    const dispute: Obj = {
      id: this.id('du'),
      object: 'dispute',
      amount: options.amount ?? charge['amount'],
      balance_transactions: [],
      charge: chargeId,
      created,
      currency: charge['currency'],
      evidence_details: { due_by: created + 7 * DAY, has_evidence: false, past_due: false, submission_count: 0 },
      // An inquiry (warning_*) still lets the merchant refund; a chargeback has taken the funds.
      is_charge_refundable: status.startsWith('warning_'),
      livemode: false,
      metadata: {},
      payment_intent: charge['payment_intent'],
      reason: options.reason ?? 'general',
      status,
    };
    this.disputes.set(dispute['id'] as string, dispute);
    charge['disputed'] = true;
    this.emit('charge.dispute.created', dispute);
    return dispute;
  }

  /** The bank decides (or an inquiry closes): the dispute's final status and `charge.dispute.closed`. */
  closeDispute(disputeId: string, status: 'won' | 'lost' | 'warning_closed'): Obj {
    const dispute = this.disputes.get(disputeId);
    if (!dispute) throw new Error(`no dispute ${disputeId}`);
    if (CLOSED_DISPUTE.has(dispute['status'] as string)) throw new Error(`dispute ${disputeId} is ${String(dispute['status'])}`);
    const before = { status: dispute['status'] };
    dispute['status'] = status;
    dispute['is_charge_refundable'] = false;
    this.emit('charge.dispute.closed', dispute, before);
    return dispute;
  }

  /** The customer confirms a portal session's `subscription_update_confirm` flow. */
  confirmPortalFlow(portalSessionId: string): Obj {
    const ps = this.portalSessions.get(portalSessionId);
    if (!ps) throw new Error(`no portal session ${portalSessionId}`);
    const flow = ps['flow'] as Obj | null;
    if (!flow || flow['type'] !== 'subscription_update_confirm') throw new Error('the portal session has no subscription_update_confirm flow');
    const confirm = flow['subscription_update_confirm'] as { subscription: string; items: Array<{ id: string; price: string; quantity?: number }> };
    const sub = this.subscriptions.get(confirm.subscription);
    if (!sub) throw new Error('subscription gone');
    this.updateSubscription(sub, { items: confirm.items.map((i) => ({ id: i.id, price: i.price, quantity: String(i.quantity ?? 1) })) });
    return sub;
  }

  /** The renewal charge fails: the invoice fails and the subscription goes past_due. */
  failPayment(subscriptionId: string): Obj {
    const sub = this.subscriptions.get(subscriptionId);
    if (!sub) throw new Error(`no subscription ${subscriptionId}`);
    const invoice = this.createInvoice(sub, 'open');
    this.emit('invoice.payment_failed', invoice);
    const before = sub['status'];
    sub['status'] = 'past_due';
    this.emit('customer.subscription.updated', sub, { status: before });
    return invoice;
  }

  /**
   * A recurring price with a chosen id, and its product: Stripe's API picks price ids itself, so a
   * local stack that names its plan prices in configuration (`price_standard`) needs them made so,
   * without a seeding step. Refused when the id is taken.
   */
  addPrice(p: { id: string; productName: string; unitAmount: number; currency?: string; interval?: 'month' | 'year' }): Obj {
    if (this.prices.has(p.id)) throw new Error(`price ${p.id} exists`);
    const product = this.createProduct({ name: p.productName });
    return this.createPrice({ product: product['id'] as string, currency: p.currency ?? 'usd', unit_amount: String(p.unitAmount), recurring: { interval: p.interval ?? 'month' } }, p.id);
  }

  /** Re-sends an event already sent (Stripe redelivers at least once). */
  redeliver(eventId: string): Promise<void> {
    const event = this.events.find((e) => e['id'] === eventId);
    if (!event) throw new Error(`no event ${eventId}`);
    return this.deliver(event);
  }

  eventsOfType(type: string): Obj[] {
    return this.events.filter((e) => e['type'] === type);
  }

  // ---- objects ----

  private id(prefix: string): string {
    return `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
  }

  /** The public view of a stored object (internal fields start with `_`). */
  private view(o: Obj): Obj {
    return Object.fromEntries(Object.entries(o).filter(([k]) => !k.startsWith('_')));
  }

  private createCustomer(p: { email?: string; name?: string; metadata?: Record<string, string> }): Obj {
    const c: Obj = { id: this.id('cus'), object: 'customer', created: now(), email: p.email ?? null, name: p.name ?? null, metadata: p.metadata ?? {}, livemode: false, deleted: undefined };
    delete c['deleted'];
    this.customers.set(c['id'] as string, c);
    this.emit('customer.created', c);
    return c;
  }

  private createProduct(params: Params): Obj {
    const p: Obj = { id: str(params['id']) ?? this.id('prod'), object: 'product', name: required(params, 'name'), active: true, created: now(), livemode: false, metadata: strings(params['metadata']) };
    if (this.products.has(p['id'] as string)) throw new StripeError(400, 'invalid_request_error', `Product already exists.`, 'resource_already_exists', 'id');
    this.products.set(p['id'] as string, p);
    return p;
  }

  private priceView(priceId: string): Obj {
    const price = this.prices.get(priceId);
    if (!price) throw new StripeError(400, 'invalid_request_error', `No such price: '${priceId}'`, 'resource_missing', 'price');
    return price;
  }

  private createSubscription(customerId: string, lineItems: Array<{ price: Obj; quantity?: number }>, metadata: Record<string, FormValue>): Obj {
    const start = now();
    const id = this.id('sub');
    const sub: Obj = {
      id,
      object: 'subscription',
      customer: customerId,
      status: 'active',
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: null,
      ended_at: null,
      created: start,
      start_date: start,
      livemode: false,
      metadata: strings(metadata),
      items: {
        object: 'list',
        has_more: false,
        url: `/v1/subscription_items?subscription=${id}`,
        data: lineItems.map((li) => ({
          id: this.id('si'),
          object: 'subscription_item',
          subscription: id,
          price: li.price,
          // A metered item has no quantity: its meter's events make the amount.
          ...(li.quantity === undefined ? {} : { quantity: li.quantity }),
          current_period_start: start,
          current_period_end: start + 30 * DAY,
          created: start,
          metadata: {},
        })),
      },
      latest_invoice: null,
    };
    this.subscriptions.set(id, sub);
    return sub;
  }

  private createInvoice(sub: Obj, status: 'paid' | 'open'): Obj {
    const items = (sub['items'] as { data: Array<{ price: Obj; quantity?: number; current_period_start: number; current_period_end: number }> }).data;
    // Metered items are billed in arrears from meter events: nothing on the invoice that opens the period.
    const amount = items.reduce((s, i) => s + Number(i.price['unit_amount'] ?? 0) * (i.quantity ?? 0), 0);
    const invoice: Obj = {
      id: this.id('in'),
      object: 'invoice',
      customer: sub['customer'],
      status,
      currency: (items[0]?.price['currency'] as string) ?? 'usd',
      amount_due: amount,
      amount_paid: status === 'paid' ? amount : 0,
      amount_remaining: status === 'paid' ? 0 : amount,
      billing_reason: 'subscription_cycle',
      created: now(),
      period_start: items[0]?.current_period_start ?? now(),
      period_end: items[0]?.current_period_end ?? now(),
      livemode: false,
      parent: { type: 'subscription_details', quote_details: null, subscription_details: { subscription: sub['id'], metadata: sub['metadata'] } },
      lines: {
        object: 'list',
        has_more: false,
        data: items.map((i) => ({ id: this.id('il'), object: 'line_item', amount: Number(i.price['unit_amount'] ?? 0) * (i.quantity ?? 0), pricing: { price_details: { price: i.price['id'] } } })),
      },
    };
    this.invoices.set(invoice['id'] as string, invoice);
    sub['latest_invoice'] = invoice['id'];
    return invoice;
  }

  private updateSubscription(sub: Obj, p: Params): Obj {
    if (sub['status'] === 'canceled') {
      throw new StripeError(400, 'invalid_request_error', 'A canceled subscription can only update its cancellation_details and metadata.', 'resource_missing');
    }
    const before: Obj = {};
    const items = (sub['items'] as { data: Obj[] }).data;
    const changes = arr(p['items']);
    if (changes.length > 0) before['items'] = { object: 'list', data: items.map((i) => ({ ...i })) };
    for (const c of changes) {
      const change = obj(c);
      const itemId = str(change['id']);
      const priceId = str(change['price']);
      const quantity = integer(change['quantity'], 'quantity');
      if (itemId) {
        const item = items.find((i) => i['id'] === itemId);
        if (!item) throw new StripeError(400, 'invalid_request_error', `No such subscription item: '${itemId}'`, 'resource_missing', 'items');
        if (bool(change['deleted'])) {
          items.splice(items.indexOf(item), 1);
          continue;
        }
        if (priceId) item['price'] = this.priceView(priceId);
        if (quantity !== undefined) item['quantity'] = quantity;
      } else if (priceId) {
        const start = now();
        items.push({ id: this.id('si'), object: 'subscription_item', subscription: sub['id'], price: this.priceView(priceId), quantity: quantity ?? 1, current_period_start: start, current_period_end: start + 30 * DAY, created: start, metadata: {} });
      }
    }
    const cape = bool(p['cancel_at_period_end']);
    if (cape !== undefined && cape !== sub['cancel_at_period_end']) {
      before['cancel_at_period_end'] = sub['cancel_at_period_end'];
      sub['cancel_at_period_end'] = cape;
      sub['cancel_at'] = cape ? ((items[0]?.['current_period_end'] as number) ?? null) : null;
      sub['canceled_at'] = cape ? now() : null;
    }
    if (p['metadata'] !== undefined) {
      before['metadata'] = sub['metadata'];
      sub['metadata'] = { ...(sub['metadata'] as Obj), ...strings(p['metadata']) };
    }
    if (Object.keys(before).length > 0) this.emit('customer.subscription.updated', sub, before);
    return sub;
  }

  private portalConfiguration(p: Params, existing?: Obj): Obj {
    const f = obj(p['features']);
    const prev = (existing?.['features'] as Obj | undefined) ?? {};
    // Each feature: the stored one (or Stripe's default), with what this request sends applied.
    const feature = (name: string, fallback: Obj): { out: Obj; given: Record<string, FormValue> } => {
      const given = obj(f[name]);
      const out: Obj = { ...((prev[name] as Obj | undefined) ?? fallback) };
      const enabled = bool(given['enabled']);
      if (enabled !== undefined) out['enabled'] = enabled;
      return { out, given };
    };
    const pm = feature('payment_method_update', { enabled: false });
    const su = feature('subscription_update', { enabled: false, default_allowed_updates: [], products: [], proration_behavior: 'create_prorations' });
    const sc = feature('subscription_cancel', { enabled: false, mode: 'at_period_end' });
    const ih = feature('invoice_history', { enabled: false });
    const subscriptionUpdate = su.out;
    if (su.given['products'] !== undefined) {
      subscriptionUpdate['products'] = arr(su.given['products']).map((x) => {
        const product = obj(x);
        const productId = str(product['product']) ?? '';
        if (!this.products.has(productId)) throw new StripeError(400, 'invalid_request_error', `No such product: '${productId}'`, 'resource_missing', 'features[subscription_update][products]');
        const prices = arr(product['prices']).map((v) => String(v));
        for (const priceId of prices) {
          const price = this.priceView(priceId);
          if (price['product'] !== productId) throw new StripeError(400, 'invalid_request_error', `The price ${priceId} does not belong to product ${productId}.`, undefined, 'features[subscription_update][products]');
          if (!price['recurring']) throw new StripeError(400, 'invalid_request_error', `The price ${priceId} is not recurring.`, undefined, 'features[subscription_update][products]');
        }
        return { product: productId, prices, adjustable_quantity: { enabled: false, maximum: null, minimum: 1 } };
      });
    }
    if (su.given['default_allowed_updates'] !== undefined) subscriptionUpdate['default_allowed_updates'] = arr(su.given['default_allowed_updates']).map(String);
    if (str(su.given['proration_behavior'])) subscriptionUpdate['proration_behavior'] = str(su.given['proration_behavior']);
    if (str(sc.given['mode'])) sc.out['mode'] = str(sc.given['mode']);
    const features = { payment_method_update: pm.out, subscription_update: subscriptionUpdate, subscription_cancel: sc.out, invoice_history: ih.out };
    // Stripe's rule: plan switching in the portal needs the customer able to update a payment method.
    if (subscriptionUpdate['enabled'] && !features.payment_method_update['enabled']) {
      throw new StripeError(400, 'invalid_request_error', 'features[payment_method_update][enabled] must be true when features[subscription_update][enabled] is true.', undefined, 'features[subscription_update][enabled]');
    }
    if (subscriptionUpdate['enabled'] && ((subscriptionUpdate['products'] as unknown[]).length === 0 || (subscriptionUpdate['default_allowed_updates'] as unknown[]).length === 0)) {
      throw new StripeError(400, 'invalid_request_error', 'features[subscription_update] needs products and default_allowed_updates when enabled.', undefined, 'features[subscription_update]');
    }
    const bp = obj(p['business_profile']);
    return {
      id: existing?.['id'] ?? this.id('bpc'),
      object: 'billing_portal.configuration',
      active: bool(p['active']) ?? existing?.['active'] ?? true,
      is_default: existing?.['is_default'] ?? this.portalConfigurations.size === 0,
      created: existing?.['created'] ?? now(),
      updated: now(),
      livemode: false,
      default_return_url: str(p['default_return_url']) ?? existing?.['default_return_url'] ?? null,
      business_profile: { headline: null, privacy_policy_url: null, terms_of_service_url: null, ...((existing?.['business_profile'] as Obj) ?? {}), ...strings(bp) },
      metadata: { ...((existing?.['metadata'] as Obj) ?? {}), ...strings(p['metadata']) },
      features,
    };
  }

  // ---- the API ----

  private async handle(method: string, path: string, query: URLSearchParams, params: Params): Promise<[number, unknown]> {
    const seg = path.split('/').filter((s) => s !== '');
    const isId = (s: string, i: number) => i >= 2 && !RESOURCE_WORDS.has(s);
    const route = `${method} /${seg.map((s, i) => (isId(s, i) ? ':id' : s)).join('/')}`;
    const id = seg.find(isId) ?? '';
    const q: Params = method === 'GET' || method === 'DELETE' ? parseStripeForm(query.toString()) : params;
    const get = <T>(map: Map<string, T>, kind: string): T => {
      const v = map.get(id);
      if (v === undefined) throw new StripeError(404, 'invalid_request_error', `No such ${kind}: '${id}'`, 'resource_missing', 'id');
      return v;
    };
    switch (route) {
      case 'POST /v1/customers':
        return [200, this.createCustomer({ email: str(params['email']), name: str(params['name']), metadata: strings(params['metadata']) })];
      case 'GET /v1/customers/:id':
        return [200, get(this.customers, 'customer')];
      case 'POST /v1/customers/:id': {
        const c = get(this.customers, 'customer');
        if (params['metadata'] !== undefined) c['metadata'] = { ...(c['metadata'] as Obj), ...strings(params['metadata']) };
        if (str(params['email'])) c['email'] = str(params['email']);
        return [200, c];
      }
      case 'GET /v1/customers':
        return [200, this.list([...this.customers.values()].filter((c) => !str(q['email']) || c['email'] === str(q['email'])), q, '/v1/customers')];
      case 'POST /v1/products':
        return [200, this.createProduct(params)];
      case 'GET /v1/products/:id':
        return [200, get(this.products, 'product')];
      case 'POST /v1/prices':
        return [200, this.createPrice(params)];
      case 'GET /v1/prices/:id':
        return [200, get(this.prices, 'price')];
      case 'GET /v1/prices': {
        const lookupKeys = arr(q['lookup_keys']).map(String);
        const active = bool(q['active']);
        const match = (p: Obj) =>
          (lookupKeys.length === 0 || lookupKeys.includes(p['lookup_key'] as string)) && (active === undefined || p['active'] === active) && (!str(q['product']) || p['product'] === str(q['product']));
        return [200, this.list([...this.prices.values()].filter(match), q, '/v1/prices')];
      }
      case 'POST /v1/billing/meters':
        return [200, this.createMeter(params)];
      case 'GET /v1/billing/meters/:id':
        return [200, get(this.meters, 'billing.meter')];
      case 'GET /v1/billing/meters': {
        const status = str(q['status']);
        return [200, this.list([...this.meters.values()].filter((m) => !status || m['status'] === status), q, '/v1/billing/meters')];
      }
      case 'POST /v1/checkout/sessions':
        return [200, this.view(this.createCheckoutSession(params))];
      case 'GET /v1/checkout/sessions/:id':
        return [200, this.view(get(this.checkoutSessions, 'checkout.session'))];
      case 'GET /v1/checkout/sessions': {
        const match = (c: Obj) => (!str(q['payment_intent']) || c['payment_intent'] === str(q['payment_intent'])) && (!str(q['customer']) || c['customer'] === str(q['customer']));
        return [200, this.list([...this.checkoutSessions.values()].filter(match), q, '/v1/checkout/sessions')];
      }
      case 'GET /v1/charges/:id':
        return [200, get(this.charges, 'charge')];
      case 'GET /v1/charges': {
        const match = (c: Obj) => (!str(q['payment_intent']) || c['payment_intent'] === str(q['payment_intent'])) && (!str(q['customer']) || c['customer'] === str(q['customer']));
        return [200, this.list([...this.charges.values()].filter(match), q, '/v1/charges')];
      }
      case 'POST /v1/refunds':
        return [200, this.createRefund(params)];
      case 'GET /v1/refunds/:id':
        return [200, get(this.refunds, 'refund')];
      case 'GET /v1/disputes/:id':
        return [200, get(this.disputes, 'dispute')];
      case 'GET /v1/disputes': {
        const match = (d: Obj) => (!str(q['charge']) || d['charge'] === str(q['charge'])) && (!str(q['payment_intent']) || d['payment_intent'] === str(q['payment_intent']));
        return [200, this.list([...this.disputes.values()].filter(match), q, '/v1/disputes')];
      }
      case 'POST /v1/disputes/:id/close': {
        // The merchant accepts the dispute: it is lost.
        const dispute = get(this.disputes, 'dispute');
        if (CLOSED_DISPUTE.has(dispute['status'] as string)) throw new StripeError(400, 'invalid_request_error', `This dispute is already closed.`);
        return [200, this.closeDispute(id, 'lost')];
      }
      case 'POST /v1/billing_portal/sessions':
        return [200, this.createPortalSession(params)];
      case 'POST /v1/billing_portal/configurations': {
        const c = this.portalConfiguration(params);
        this.portalConfigurations.set(c['id'] as string, c);
        return [200, c];
      }
      case 'POST /v1/billing_portal/configurations/:id': {
        const c = this.portalConfiguration(params, get(this.portalConfigurations, 'billing_portal.configuration'));
        this.portalConfigurations.set(c['id'] as string, c);
        return [200, c];
      }
      case 'GET /v1/billing_portal/configurations/:id':
        return [200, get(this.portalConfigurations, 'billing_portal.configuration')];
      case 'GET /v1/billing_portal/configurations': {
        const active = bool(q['active']);
        const isDefault = bool(q['is_default']);
        return [200, this.list([...this.portalConfigurations.values()].filter((c) => (active === undefined || c['active'] === active) && (isDefault === undefined || c['is_default'] === isDefault)), q, '/v1/billing_portal/configurations')];
      }
      case 'POST /v1/subscriptions':
        return [200, this.createSubscriptionFromApi(params)];
      case 'GET /v1/subscriptions/:id':
        return [200, get(this.subscriptions, 'subscription')];
      case 'GET /v1/subscriptions': {
        const status = str(q['status']);
        const price = str(q['price']);
        const hasPrice = (s: Obj) => !price || (s['items'] as { data: Array<{ price: Obj }> }).data.some((i) => i.price['id'] === price);
        return [
          200,
          this.list(
            [...this.subscriptions.values()].filter((s) => (!str(q['customer']) || s['customer'] === str(q['customer'])) && hasPrice(s) && (status === 'all' || (status ? s['status'] === status : s['status'] !== 'canceled'))),
            q,
            '/v1/subscriptions',
          ),
        ];
      }
      case 'POST /v1/subscriptions/:id':
        return [200, this.updateSubscription(get(this.subscriptions, 'subscription'), params)];
      case 'DELETE /v1/subscriptions/:id': {
        const sub = get(this.subscriptions, 'subscription');
        if (sub['status'] === 'canceled') throw new StripeError(404, 'invalid_request_error', `No such subscription: '${id}'`, 'resource_missing', 'id');
        const before = { status: sub['status'] };
        sub['status'] = 'canceled';
        sub['canceled_at'] = now();
        sub['ended_at'] = now();
        this.emit('customer.subscription.deleted', sub, before);
        return [200, sub];
      }
      case 'GET /v1/invoices/:id':
        return [200, get(this.invoices, 'invoice')];
      case 'GET /v1/invoices':
        return [200, this.list([...this.invoices.values()].filter((i) => !str(q['customer']) || i['customer'] === str(q['customer'])), q, '/v1/invoices')];
      case 'GET /v1/events/:id':
        return [200, get(new Map(this.events.map((e) => [e['id'] as string, e])), 'event')];
      case 'GET /v1/events': {
        const created = obj(q['created']);
        const gte = integer(created['gte'], 'created[gte]') ?? integer(str(q['created']), 'created');
        const types = [...arr(q['types']).map(String), ...(str(q['type']) ? [str(q['type']) as string] : [])];
        if (arr(q['types']).length > 20) throw new StripeError(400, 'invalid_request_error', 'types: an array of up to 20 event names.', undefined, 'types');
        const match = (t: string) => types.length === 0 || types.some((p) => (p.endsWith('*') ? t.startsWith(p.slice(0, -1)) : t === p));
        return [200, this.list(this.events.filter((e) => (gte === undefined || (e['created'] as number) >= gte) && match(e['type'] as string)), q, '/v1/events')];
      }
      case 'POST /v1/billing/meter_events':
        return [200, this.createMeterEvent(params)];
      default:
        throw new StripeError(404, 'invalid_request_error', `Unrecognized request URL (${method}: ${path}).`);
    }
  }

  /** `id`: only through addPrice; the API always makes one. */
  private createPrice(params: Params, id?: string): Obj {
    const product = required(params, 'product');
    if (!this.products.has(product)) throw new StripeError(400, 'invalid_request_error', `No such product: '${product}'`, 'resource_missing', 'product');
    const recurring = obj(params['recurring']);
    const interval = str(recurring['interval']);
    const usageType = str(recurring['usage_type']) ?? 'licensed';
    const meter = str(recurring['meter']) ?? null;
    if (interval && usageType === 'metered') {
      // Since API version 2025-03-31 a metered price must be backed by an active billing meter.
      if (!meter) throw new StripeError(400, 'invalid_request_error', 'Metered prices must be backed by a meter: pass recurring[meter].', 'parameter_missing', 'recurring[meter]');
      if (this.meters.get(meter)?.['status'] !== 'active') throw new StripeError(400, 'invalid_request_error', `No such billing meter: '${meter}'`, 'resource_missing', 'recurring[meter]');
    }
    const unitAmountDecimal = str(params['unit_amount_decimal']);
    if (unitAmountDecimal !== undefined && !/^\d+(\.\d{1,12})?$/.test(unitAmountDecimal)) throw new StripeError(400, 'invalid_request_error', 'Invalid decimal: unit_amount_decimal', undefined, 'unit_amount_decimal');
    const unitAmount = integer(params['unit_amount'], 'unit_amount') ?? 0;
    const lookupKey = str(params['lookup_key']) ?? null;
    const holder = lookupKey ? [...this.prices.values()].find((p) => p['lookup_key'] === lookupKey) : undefined;
    if (holder) {
      if (!bool(params['transfer_lookup_key'])) throw new StripeError(400, 'invalid_request_error', `A price (\`${String(holder['id'])}\`) already uses that lookup key.`, undefined, 'lookup_key');
      holder['lookup_key'] = null;
    }
    const p: Obj = {
      id: id ?? this.id('price'),
      object: 'price',
      product,
      active: true,
      currency: required(params, 'currency'),
      billing_scheme: 'per_unit',
      // A fraction of a cent is only in unit_amount_decimal; unit_amount is then null, as at Stripe.
      unit_amount: unitAmountDecimal === undefined ? unitAmount : Number.isInteger(Number(unitAmountDecimal)) ? Number(unitAmountDecimal) : null,
      unit_amount_decimal: unitAmountDecimal ?? String(unitAmount),
      type: interval ? 'recurring' : 'one_time',
      recurring: interval ? { interval, interval_count: 1, usage_type: usageType, meter, trial_period_days: null } : null,
      lookup_key: lookupKey,
      nickname: str(params['nickname']) ?? null,
      metadata: strings(params['metadata']),
      created: now(),
      livemode: false,
    };
    this.prices.set(p['id'] as string, p);
    return p;
  }

  private createMeter(params: Params): Obj {
    const eventName = required(params, 'event_name');
    const displayName = required(params, 'display_name');
    const formula = str(obj(params['default_aggregation'])['formula']);
    if (!formula || !['sum', 'count', 'last'].includes(formula)) throw new StripeError(400, 'invalid_request_error', 'Missing or invalid default_aggregation[formula]: one of count, last, sum.', 'parameter_missing', 'default_aggregation[formula]');
    // Stripe's rule: one active meter per event name.
    if ([...this.meters.values()].some((m) => m['event_name'] === eventName && m['status'] === 'active')) {
      throw new StripeError(400, 'invalid_request_error', `An active meter with event_name ${eventName} already exists.`, 'resource_already_exists', 'event_name');
    }
    const cm = obj(params['customer_mapping']);
    const vs = obj(params['value_settings']);
    const at = now();
    const meter: Obj = {
      id: `mtr_test_${randomBytes(12).toString('hex')}`,
      object: 'billing.meter',
      created: at,
      updated: at,
      livemode: false,
      display_name: displayName,
      event_name: eventName,
      event_time_window: str(params['event_time_window']) ?? null,
      status: 'active',
      status_transitions: { deactivated_at: null },
      default_aggregation: { formula },
      customer_mapping: { type: str(cm['type']) ?? 'by_id', event_payload_key: str(cm['event_payload_key']) ?? 'stripe_customer_id' },
      value_settings: { event_payload_key: str(vs['event_payload_key']) ?? 'value' },
    };
    this.meters.set(meter['id'] as string, meter);
    return meter;
  }

  /** `POST /v1/subscriptions`: a customer subscribed to prices without Checkout (the first invoice is paid at once, as for a $0 or metered one). */
  private createSubscriptionFromApi(params: Params): Obj {
    const customer = required(params, 'customer');
    if (!this.customers.has(customer)) throw new StripeError(400, 'invalid_request_error', `No such customer: '${customer}'`, 'resource_missing', 'customer');
    const items = arr(params['items']).map((x, i) => {
      const item = obj(x);
      const price = this.priceView(str(item['price']) ?? '');
      if (!price['recurring']) throw new StripeError(400, 'invalid_request_error', 'A subscription item needs a recurring price.', undefined, `items[${i}][price]`);
      const quantity = integer(item['quantity'], `items[${i}][quantity]`);
      const metered = (price['recurring'] as Obj)['usage_type'] === 'metered';
      if (metered && quantity !== undefined) throw new StripeError(400, 'invalid_request_error', 'Quantity should not be specified where usage_type is `metered`.', undefined, `items[${i}][quantity]`);
      return { price, quantity: metered ? undefined : (quantity ?? 1) };
    });
    if (items.length === 0) throw new StripeError(400, 'invalid_request_error', 'Missing required param: items.', 'parameter_missing', 'items');
    const sub = this.createSubscription(customer, items, obj(params['metadata']));
    this.emit('customer.subscription.created', sub);
    this.emit('invoice.paid', this.createInvoice(sub, 'paid'));
    return sub;
  }

  /** The card payment a paid Checkout Session in payment mode made, as its PaymentIntent's charge. */
  private createCharge(paymentIntent: string, customer: string, amount: number, currency: string): Obj {
    const charge: Obj = {
      id: this.id('ch'),
      object: 'charge',
      amount,
      amount_captured: amount,
      amount_refunded: 0,
      application: null,
      application_fee: null,
      application_fee_amount: null,
      balance_transaction: null,
      billing_details: { address: null, email: null, name: null, phone: null },
      calculated_statement_descriptor: null,
      captured: true,
      created: now(),
      currency,
      customer,
      description: null,
      disputed: false,
      failure_balance_transaction: null,
      failure_code: null,
      failure_message: null,
      fraud_details: {},
      livemode: false,
      metadata: {},
      on_behalf_of: null,
      outcome: null,
      paid: true,
      payment_intent: paymentIntent,
      payment_method: null,
      payment_method_details: null,
      receipt_email: null,
      receipt_number: null,
      receipt_url: null,
      refunded: false,
      review: null,
      shipping: null,
      source_transfer: null,
      statement_descriptor: null,
      statement_descriptor_suffix: null,
      status: 'succeeded',
      transfer_data: null,
      transfer_group: null,
    };
    this.charges.set(charge['id'] as string, charge);
    return charge;
  }

  /**
   * `POST /v1/refunds`: of a charge or a PaymentIntent's charge, the rest of it unless `amount` says
   * less. Succeeds at once (a card refund); the charge's cumulative `amount_refunded` grows, and
   * `refund.created` and `charge.refunded` follow.
   */
  private createRefund(params: Params): Obj {
    const chargeId = str(params['charge']);
    const pi = str(params['payment_intent']);
    if (!chargeId && !pi) throw new StripeError(400, 'invalid_request_error', 'One of `charge` or `payment_intent` is required.', 'parameter_missing', 'charge');
    const charge = chargeId ? this.charges.get(chargeId) : [...this.charges.values()].find((c) => c['payment_intent'] === pi);
    if (!charge) throw new StripeError(400, 'invalid_request_error', chargeId ? `No such charge: '${chargeId}'` : `No such payment_intent: '${pi ?? ''}'`, 'resource_missing', chargeId ? 'charge' : 'payment_intent');
    const remaining = (charge['amount'] as number) - (charge['amount_refunded'] as number);
    if (remaining <= 0) throw new StripeError(400, 'invalid_request_error', `Charge ${String(charge['id'])} has already been refunded.`, 'charge_already_refunded');
    const disputed = [...this.disputes.values()].some((d) => d['charge'] === charge['id'] && !CLOSED_DISPUTE.has(d['status'] as string) && !d['is_charge_refundable']);
    if (disputed) throw new StripeError(400, 'invalid_request_error', `Charge ${String(charge['id'])} has been charged back; it cannot be refunded.`, 'charge_disputed');
    const amount = integer(params['amount'], 'amount') ?? remaining;
    if (amount < 1) throw new StripeError(400, 'invalid_request_error', 'Invalid positive integer', 'parameter_invalid_integer', 'amount');
    if (amount > remaining) throw new StripeError(400, 'invalid_request_error', `Refund amount (${amount}) is greater than unrefunded amount on charge (${remaining})`, undefined, 'amount');
    const refund: Obj = {
      id: this.id('re'),
      object: 'refund',
      amount,
      balance_transaction: null,
      charge: charge['id'],
      created: now(),
      currency: charge['currency'],
      metadata: strings(params['metadata']),
      payment_intent: charge['payment_intent'],
      reason: str(params['reason']) ?? null,
      receipt_number: null,
      source_transfer_reversal: null,
      status: 'succeeded',
      transfer_reversal: null,
    };
    this.refunds.set(refund['id'] as string, refund);
    charge['amount_refunded'] = (charge['amount_refunded'] as number) + amount;
    charge['refunded'] = charge['amount_refunded'] === charge['amount'];
    this.emit('refund.created', refund);
    this.emit('charge.refunded', charge, { amount_refunded: (charge['amount_refunded'] as number) - amount, refunded: false });
    return refund;
  }

  private createCheckoutSession(params: Params): Obj {
    const mode = required(params, 'mode');
    if (!['subscription', 'payment', 'setup'].includes(mode)) throw new StripeError(400, 'invalid_request_error', `Invalid mode: must be one of payment, setup, or subscription`, undefined, 'mode');
    const successUrl = required(params, 'success_url');
    const customer = str(params['customer']);
    if (customer && !this.customers.has(customer)) throw new StripeError(400, 'invalid_request_error', `No such customer: '${customer}'`, 'resource_missing', 'customer');
    const lineItems = arr(params['line_items']).map((x, i) => {
      const li = obj(x);
      const quantity = integer(li['quantity'], `line_items[${i}][quantity]`) ?? 1;
      const priceId = str(li['price']);
      if (priceId) {
        const price = this.priceView(priceId);
        if (mode === 'subscription' && !price['recurring']) throw new StripeError(400, 'invalid_request_error', 'You must use a recurring price in subscription mode.', undefined, `line_items[${i}][price]`);
        if (mode === 'payment' && price['recurring']) throw new StripeError(400, 'invalid_request_error', 'You specified `payment` mode but passed a recurring price.', undefined, `line_items[${i}][price]`);
        return { price, quantity };
      }
      const pd = obj(li['price_data']);
      const unitAmount = integer(pd['unit_amount'], `line_items[${i}][price_data][unit_amount]`);
      const name = str(obj(pd['product_data'])['name']);
      if (unitAmount === undefined || !str(pd['currency']) || !name) throw new StripeError(400, 'invalid_request_error', `Missing required param: line_items[${i}][price_data].`, 'parameter_missing', `line_items[${i}][price_data]`);
      const product: Obj = { id: this.id('prod'), object: 'product', name, active: true, created: now(), livemode: false, metadata: {} };
      this.products.set(product['id'] as string, product);
      const price: Obj = { id: this.id('price'), object: 'price', product: product['id'], active: false, currency: str(pd['currency']), unit_amount: unitAmount, type: 'one_time', recurring: null, metadata: {}, created: now(), livemode: false };
      this.prices.set(price['id'] as string, price);
      return { price, quantity };
    });
    if (lineItems.length === 0 && mode !== 'setup') throw new StripeError(400, 'invalid_request_error', 'Missing required param: line_items.', 'parameter_missing', 'line_items');
    const amount = lineItems.reduce((s, li) => s + Number(li.price['unit_amount'] ?? 0) * li.quantity, 0);
    if (mode === 'payment' && amount < 50) throw new StripeError(400, 'invalid_request_error', 'The Checkout Session\'s total amount due must add up to at least $0.50 usd', 'amount_too_small', 'line_items');
    const id = `cs_test_${randomBytes(24).toString('base64url').replace(/[-_]/g, 'a')}`;
    const session: Obj = {
      id,
      object: 'checkout.session',
      mode,
      status: 'open',
      payment_status: 'unpaid',
      url: `${this.publicUrl}/checkout/${id}`,
      success_url: successUrl,
      cancel_url: str(params['cancel_url']) ?? null,
      customer: customer ?? null,
      customer_email: str(params['customer_email']) ?? null,
      client_reference_id: str(params['client_reference_id']) ?? null,
      metadata: strings(params['metadata']),
      subscription: null,
      invoice: null,
      payment_intent: null,
      amount_subtotal: amount,
      amount_total: amount,
      currency: (lineItems[0]?.price['currency'] as string) ?? null,
      created: now(),
      expires_at: now() + DAY,
      livemode: false,
      _line_items: lineItems,
      _subscription_metadata: obj(obj(params['subscription_data'])['metadata']),
    };
    this.checkoutSessions.set(id, session);
    return session;
  }

  private createPortalSession(params: Params): Obj {
    const customer = required(params, 'customer');
    if (!this.customers.has(customer)) throw new StripeError(400, 'invalid_request_error', `No such customer: '${customer}'`, 'resource_missing', 'customer');
    const configId = str(params['configuration']);
    const config = configId ? this.portalConfigurations.get(configId) : [...this.portalConfigurations.values()].find((c) => c['is_default']);
    if (configId && !config) throw new StripeError(400, 'invalid_request_error', `No such configuration: '${configId}'`, 'resource_missing', 'configuration');
    if (!config) throw new StripeError(400, 'invalid_request_error', 'You can’t create a portal session in test mode until you save your customer portal settings.');
    const flowData = obj(params['flow_data']);
    let flow: Obj | null = null;
    if (str(flowData['type'])) {
      const type = str(flowData['type']);
      if (type !== 'subscription_update_confirm') throw new StripeError(400, 'invalid_request_error', `The fake supports flow_data[type]=subscription_update_confirm only, not ${type}.`, undefined, 'flow_data[type]');
      const confirm = obj(flowData['subscription_update_confirm']);
      const subId = str(confirm['subscription']) ?? '';
      const sub = this.subscriptions.get(subId);
      if (!sub || sub['customer'] !== customer) throw new StripeError(400, 'invalid_request_error', `No such subscription: '${subId}'`, 'resource_missing', 'flow_data[subscription_update_confirm][subscription]');
      if (sub['status'] === 'canceled') throw new StripeError(400, 'invalid_request_error', 'The subscription is canceled.', undefined, 'flow_data[subscription_update_confirm][subscription]');
      const subItems = (sub['items'] as { data: Obj[] }).data;
      // Stripe's rules for this flow: single-item subscriptions only, and only prices the portal configuration lists.
      if (subItems.length !== 1) throw new StripeError(400, 'invalid_request_error', 'subscription_update_confirm flows are only supported for subscriptions with a single item.', undefined, 'flow_data[subscription_update_confirm][subscription]');
      const items = arr(confirm['items']).map((x) => obj(x));
      if (items.length !== 1) throw new StripeError(400, 'invalid_request_error', 'flow_data[subscription_update_confirm][items] must name exactly one item.', undefined, 'flow_data[subscription_update_confirm][items]');
      const su = (config['features'] as { subscription_update: { enabled: boolean; products: Array<{ prices: string[] }> } }).subscription_update;
      const priceId = str(items[0]['price']) ?? '';
      if (!su.enabled || !su.products.some((p) => p.prices.includes(priceId))) {
        throw new StripeError(400, 'invalid_request_error', `The price ${priceId} is not one of the prices the portal configuration allows for subscription updates.`, undefined, 'flow_data[subscription_update_confirm][items][0][price]');
      }
      if (str(items[0]['id']) !== subItems[0]['id']) throw new StripeError(400, 'invalid_request_error', `No such subscription item: '${str(items[0]['id']) ?? ''}'`, 'resource_missing', 'flow_data[subscription_update_confirm][items][0][id]');
      this.priceView(priceId);
      const after = obj(flowData['after_completion']);
      flow = {
        type,
        subscription_update_confirm: { subscription: subId, items: [{ id: str(items[0]['id']), price: priceId, quantity: integer(items[0]['quantity'], 'quantity') ?? 1 }], discounts: null },
        after_completion: { type: str(after['type']) ?? 'portal_homepage', redirect: str(obj(after['redirect'])['return_url']) ? { return_url: str(obj(after['redirect'])['return_url']) } : null, hosted_confirmation: null },
        subscription_cancel: null,
        subscription_update: null,
      };
    }
    const id = this.id('bps');
    const session: Obj = { id, object: 'billing_portal.session', customer, configuration: config['id'], flow, return_url: str(params['return_url']) ?? null, url: `${this.publicUrl}/portal/${id}`, created: now(), livemode: false, locale: null, on_behalf_of: null };
    this.portalSessions.set(id, session);
    return session;
  }

  private createMeterEvent(params: Params): Obj {
    const eventName = required(params, 'event_name');
    const payload = strings(params['payload']);
    if (!payload['stripe_customer_id']) throw new StripeError(400, 'invalid_request_error', 'Missing required param: payload[stripe_customer_id].', 'parameter_missing', 'payload');
    if (payload['value'] !== undefined && !/^\d+(\.\d+)?$/.test(payload['value'])) throw new StripeError(400, 'invalid_request_error', 'payload[value] must be a number.', undefined, 'payload[value]');
    const ts = integer(params['timestamp'], 'timestamp') ?? now();
    // Stripe accepts events from the last 35 calendar days up to 5 minutes ahead.
    if (ts < now() - 35 * DAY || ts > now() + 300) {
      throw new StripeError(400, 'invalid_request_error', 'Timestamp must be within the past 35 calendar days or up to 5 minutes in the future.', undefined, 'timestamp');
    }
    const identifier = str(params['identifier']) ?? randomBytes(16).toString('hex');
    if (identifier.length > 100) throw new StripeError(400, 'invalid_request_error', 'identifier is too long (max 100).', undefined, 'identifier');
    if (this.meterEvents.some((e) => e.identifier === identifier)) {
      throw new StripeError(400, 'invalid_request_error', `An event already exists with identifier ${identifier}.`, 'resource_already_exists', 'identifier');
    }
    const event: FakeMeterEvent = { event_name: eventName, identifier, payload, timestamp: ts, created: now() };
    this.meterEvents.push(event);
    return { object: 'billing.meter_event', livemode: false, ...event };
  }

  private list(items: Obj[], q: Params, url: string): Obj {
    const limit = Math.min(100, Math.max(1, integer(q['limit'], 'limit') ?? 10));
    // Newest first, as Stripe lists.
    let sorted = [...items].reverse();
    const after = str(q['starting_after']);
    if (after) {
      const i = sorted.findIndex((x) => x['id'] === after);
      sorted = i < 0 ? [] : sorted.slice(i + 1);
    }
    return { object: 'list', url, has_more: sorted.length > limit, data: sorted.slice(0, limit).map((o) => this.view(o)) };
  }

  // ---- events and webhooks ----

  private emit(type: string, object: Obj, previous?: Obj): void {
    const last = this.events[this.events.length - 1];
    const event: Obj = {
      id: this.id('evt'),
      object: 'event',
      api_version: Stripe.API_VERSION,
      // Strictly increasing `created` per fake keeps catch-up windows testable.
      created: Math.max(now(), (last?.['created'] as number | undefined) ?? 0),
      type,
      livemode: false,
      pending_webhooks: this.webhookUrl ? 1 : 0,
      request: { id: null, idempotency_key: null },
      data: { object: JSON.parse(JSON.stringify(this.view(object))) as Obj, ...(previous ? { previous_attributes: JSON.parse(JSON.stringify(previous)) as Obj } : {}) },
    };
    this.events.push(event);
    if (this.deliverWebhooks) void this.deliver(event);
  }

  /** Signs `payload` the way Stripe does (`t=...,v1=...`), with stripe-node's own helper. */
  static sign(payload: string, secret: string, timestamp = now()): string {
    return new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload, secret, timestamp });
  }

  private deliver(event: Obj): Promise<void> {
    const url = this.webhookUrl;
    const secret = this.webhookSecrets[0];
    if (!url || !secret) return Promise.resolve();
    const payload = JSON.stringify(event, null, 2);
    const p = (async () => {
      let status: number | 'error';
      try {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': FakeStripe.sign(payload, secret), 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' }, body: payload });
        await res.arrayBuffer();
        status = res.status;
      } catch {
        status = 'error';
      }
      this.deliveries.push({ eventId: event['id'] as string, type: event['type'] as string, status });
    })();
    this.pendingDeliveries.add(p);
    void p.finally(() => this.pendingDeliveries.delete(p));
    return p;
  }

  // ---- HTTP ----

  private makeServer(): Server {
    const server = createServer((req, res) => void this.onRequest(req, res));
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    return server;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = req.method ?? 'GET';
    if (!url.pathname.startsWith('/v1/')) return this.page(method, url, body, res);
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(8).toString('hex')}`, 'stripe-version': Stripe.API_VERSION, ...headers });
      res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
    };
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    const record: FakeStripeRequest = { method, path: url.pathname, params: {}, status: 0 };
    this.requests.push(record);
    if (this.mode === 'error') {
      record.status = 500;
      return send(500, { error: { type: 'api_error', message: 'An unknown error occurred (the fake Stripe is switched to failing).' } });
    }
    const auth = req.headers['authorization'] ?? '';
    const key = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (!this.apiKeys.has(key)) {
      record.status = 401;
      return send(401, { error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}` } });
    }
    let params: Params;
    try {
      params = parseStripeForm(body);
    } catch (err) {
      record.status = 400;
      return send(400, { error: { type: 'invalid_request_error', message: (err as Error).message } });
    }
    record.params = params;
    const idemKey = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
    record.idempotencyKey = idemKey;
    if (idemKey !== undefined && idemKey.length > 255) {
      record.status = 400;
      return send(400, { error: { type: 'invalid_request_error', message: 'Idempotency-Key must be at most 255 characters long.' } });
    }
    if (idemKey && method === 'POST') {
      const fingerprint = createHash('sha256').update(`${method} ${url.pathname}\n${body}`).digest('hex');
      const prior = this.idempotency.get(`${key}:${idemKey}`);
      if (prior) {
        if (prior.fingerprint !== fingerprint) {
          record.status = 400;
          return send(400, { error: { type: 'idempotency_error', message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idemKey}' if you meant to execute a different request.` } });
        }
        record.status = prior.status;
        return send(prior.status, prior.body, { 'idempotent-replayed': 'true', 'original-request': 'req_replayed' });
      }
    }
    let status: number;
    let out: unknown;
    try {
      [status, out] = await this.handle(method, url.pathname, url.searchParams, params);
    } catch (err) {
      if (!(err instanceof StripeError)) throw err;
      status = err.status;
      out = { error: { type: err.type, message: err.message, ...(err.code ? { code: err.code } : {}), ...(err.param ? { param: err.param } : {}) } };
    }
    const text = JSON.stringify(out);
    // Stripe stores the result of any request that got as far as executing (not 5xx).
    if (idemKey && method === 'POST' && status < 500) this.idempotency.set(`${key}:${idemKey}`, { fingerprint: createHash('sha256').update(`${method} ${url.pathname}\n${body}`).digest('hex'), status, body: text });
    record.status = status;
    send(status, text, idemKey ? { 'idempotency-key': idemKey } : {});
  }

  /** The hosted pages, so a checkout or portal link opened in a browser works locally. */
  private page(method: string, url: URL, body: string, res: ServerResponse): void {
    const [, kind, id, action] = url.pathname.split('/');
    const html = (status: number, content: string) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html><head><title>Fake Stripe</title></head><body>${content}</body></html>`);
    };
    const redirect = (to: string) => {
      res.writeHead(303, { location: to });
      res.end();
    };
    const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    try {
      if (kind === 'checkout' && this.checkoutSessions.has(id)) {
        const s = this.checkoutSessions.get(id) as Obj;
        if (method === 'POST' && action === 'complete') {
          this.completeCheckout(id);
          return redirect(String(s['success_url']).replace('{CHECKOUT_SESSION_ID}', id));
        }
        return html(200, `<h1>Fake Stripe Checkout</h1><p>${esc(String(s['mode']))}: ${Number(s['amount_total']) / 100} ${esc(String(s['currency'] ?? ''))}</p><form method="post" action="/checkout/${esc(id)}/complete"><button>Pay</button></form>${s['cancel_url'] ? `<a href="${esc(String(s['cancel_url']))}">Cancel</a>` : ''}`);
      }
      if (kind === 'portal' && this.portalSessions.has(id)) {
        const s = this.portalSessions.get(id) as Obj;
        const flow = s['flow'] as { after_completion?: { redirect?: { return_url?: string } | null } } | null;
        if (method === 'POST' && action === 'confirm') {
          this.confirmPortalFlow(id);
          return redirect(flow?.after_completion?.redirect?.return_url ?? String(s['return_url'] ?? '/'));
        }
        return html(200, `<h1>Fake Stripe customer portal</h1>${flow ? `<form method="post" action="/portal/${esc(id)}/confirm"><button>Confirm plan change</button></form>` : '<p>Nothing to do here.</p>'}${s['return_url'] ? `<a href="${esc(String(s['return_url']))}">Return</a>` : ''}`);
      }
    } catch (err) {
      return html(400, `<p>${esc((err as Error).message)}</p>`);
    }
    void body;
    html(404, '<p>Not found</p>');
  }
}
