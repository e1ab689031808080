import { Logger } from '@nestjs/common';
import { inlineTransactions } from '@flagship/persistence/testing';
import { FakePubSub } from '@flagship/redis/testing';
import { type BillingWorld, billingWorld } from '../testing/billing-world';
import { StripeEventProcessor } from './stripe-event.processor';
import { FakeStripeEventsRepository } from './stripe-events.repository.fake';

const TENANT = '00000000-0000-4000-8000-0000000000a1';

let seq = 0;
/** A Stripe event as the webhook (or the catch-up) stores it. */
const event = (type: string, object: Record<string, unknown>, created = 1_767_225_600) => ({ id: `evt_${++seq}`, object: 'event', type, created, data: { object } });

describe('StripeEventProcessor: each Stripe event takes effect once', () => {
  let w: BillingWorld;
  let inbox: FakeStripeEventsRepository;
  let pubsub: FakePubSub;
  let processor: StripeEventProcessor;
  let customer: string;

  beforeEach(async () => {
    w = billingWorld();
    inbox = new FakeStripeEventsRepository();
    pubsub = new FakePubSub();
    processor = new StripeEventProcessor(inlineTransactions, pubsub, inbox, w.service, w.metrics);
    customer = await w.tenantWithCustomer(TENANT);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  const drain = async () => {
    let n = 0;
    while (await processor.processNext()) n++;
    return n;
  };
  const paidInvoice = (id: string, subscription: string) => ({ id, object: 'invoice', customer, currency: 'usd', amount_paid: 4900, amount_due: 4900, created: 1_767_225_600, parent: { subscription_details: { subscription } } });
  const counted = async (outcome: string) => (await w.metrics.events.get()).values.filter((v) => v.labels['outcome'] === outcome).reduce((s, v) => s + v.value, 0);

  it('an event is processed once: marked in the transaction of its effect, never claimed again; a redelivery is not even stored', async () => {
    const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
    const e = event('invoice.paid', paidInvoice('in_1', sub.id));
    expect(await inbox.store(e, 'webhook')).toBe(true);
    expect(await drain()).toBe(1);
    expect(inbox.rows.get(e.id)).toMatchObject({ attempts: 1, processedAt: inbox.now, lastError: null });
    expect(await inbox.store(e, 'webhook')).toBe(false);
    expect(await inbox.store(e, 'catch_up')).toBe(false);
    expect(await drain()).toBe(0);
    expect(w.sync.ledger.map((l) => l.stripeObjectId)).toEqual(['in_1']);
    expect(await counted('processed')).toBe(1);
  });

  it('two events of one invoice (invoice.paid and invoice.payment_succeeded) record it once', async () => {
    const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
    await inbox.store(event('invoice.paid', paidInvoice('in_2', sub.id)), 'webhook');
    await inbox.store(event('invoice.payment_succeeded', paidInvoice('in_2', sub.id)), 'webhook');
    expect(await drain()).toBe(2);
    expect(w.sync.ledger.map((l) => [l.kind, l.stripeObjectId])).toEqual([['invoice_paid', 'in_2']]);
  });

  it("takes events in Stripe's order, not their arrival's; the tenant each changed is announced after its commit", async () => {
    const sub = w.stripe.addSubscription({ customer, prices: [w.plans.standard] });
    const later = event('customer.subscription.updated', { id: sub.id }, 2_000);
    const earlier = event('customer.subscription.created', { id: sub.id }, 1_000);
    await inbox.store(later, 'webhook');
    await inbox.store(earlier, 'catch_up');
    const order: string[] = [];
    const claim = inbox.claimNext.bind(inbox);
    inbox.claimNext = async () => {
      const e = await claim();
      if (e) order.push(e.id);
      return e;
    };
    expect(await drain()).toBe(2);
    expect(order).toEqual([earlier.id, later.id]);
    expect(pubsub.sent).toEqual([
      { channel: 'tenant-changed', message: { tenantId: TENANT } },
      { channel: 'tenant-changed', message: { tenantId: TENANT } },
    ]);
    expect(w.sync.tenants.get(TENANT)?.plan).toBe('standard');
  });

  it('an event whose effect fails stays for a later attempt, backing off from 5 s (doubling, at most an hour); Stripe unreachable is retried after 1 s', async () => {
    const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
    const e = event('customer.subscription.updated', { id: sub.id });
    await inbox.store(e, 'webhook');
    w.stripe.down = true;
    await expect(processor.processNext()).rejects.toThrow(/down/);
    expect(inbox.rows.get(e.id)).toMatchObject({ processedAt: null, attempts: 1, nextAttemptAt: inbox.now + 1000, lastError: expect.stringContaining('down') });
    expect(await processor.processNext()).toBe(false);
    // Any other failure backs off by its attempts so far.
    w.stripe.down = false;
    w.stripe.failing = () => {
      throw new Error('a bug, not an outage');
    };
    const delays: number[] = [];
    for (let i = 0; i < 12; i++) {
      inbox.now = inbox.rows.get(e.id)!.nextAttemptAt;
      await expect(processor.processNext()).rejects.toThrow('a bug');
      delays.push(inbox.rows.get(e.id)!.nextAttemptAt - inbox.now);
    }
    expect(delays).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 2_560_000, 3_600_000, 3_600_000, 3_600_000]);
    expect(await counted('failed')).toBe(13);
    // Fixed, it takes effect at its next attempt.
    w.stripe.failing = undefined;
    inbox.now = inbox.rows.get(e.id)!.nextAttemptAt;
    expect(await processor.processNext()).toBe(true);
    expect(w.sync.tenants.get(TENANT)?.plan).toBe('premium');
    expect(inbox.rows.get(e.id)).toMatchObject({ attempts: 14, lastError: null });
  });

  it('the first attempt of a failing event waits 5 s', async () => {
    await inbox.store(event('customer.subscription.updated', { id: 'sub_x' }), 'webhook');
    w.stripe.failing = () => {
      throw new Error('boom');
    };
    await expect(processor.processNext()).rejects.toThrow('boom');
    expect([...inbox.rows.values()][0]!.nextAttemptAt - inbox.now).toBe(5000);
  });

  it('types it does not act on are processed with no effect; a change Redis cannot announce is kept', async () => {
    await inbox.store(event('customer.updated', { id: customer }), 'webhook');
    expect(await drain()).toBe(1);
    expect(w.stripe.calls).toEqual([]);
    const sub = w.stripe.addSubscription({ customer, prices: [w.plans.premium] });
    pubsub.down = true;
    await inbox.store(event('customer.subscription.created', { id: sub.id }), 'webhook');
    expect(await drain()).toBe(1);
    expect(w.sync.tenants.get(TENANT)?.plan).toBe('premium');
  });

  it.each([
    ['charge.refunded', { id: 'ch_1', object: 'charge' }, 'ch_1'],
    ['refund.created', { id: 're_1', object: 'refund', charge: 'ch_2' }, 'ch_2'],
    ['charge.dispute.created', { id: 'du_1', object: 'dispute', charge: { id: 'ch_3' } }, 'ch_3'],
    ['charge.dispute.closed', { id: 'du_2', object: 'dispute', charge: "ch_'; DROP" }, null],
    ['refund.failed', { id: 're_2', object: 'refund', charge: null }, null],
  ])('%s: re-reads the charge it is about (%#)', async (type, object, charge) => {
    await inbox.store(event(type, object), 'webhook');
    expect(await drain()).toBe(1);
    expect(w.stripe.calls.filter((c) => c.method === 'charge').map((c) => c.args[0])).toEqual(charge ? [charge] : []);
  });
});
