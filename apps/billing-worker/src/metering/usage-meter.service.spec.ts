import { Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import type { UsageRow } from '@flagship/ledger';
import { usageMeterJob } from '../jobs/usage-meter.job';
import type { BillingWorkerConfig } from '../env.schema';
import { inlineTransactions } from '@flagship/persistence/testing';
import { type BillingWorld, billingWorld } from '../testing/billing-world';
import { FakeUsageOutbox } from '../testing/usage-outbox.fake';
import { UsageMeterService } from './usage-meter.service';

const A = '00000000-0000-4000-8000-0000000000a1';
const B = '00000000-0000-4000-8000-0000000000b2';
const DAY_S = 86_400;

describe('UsageMeterService: billable usage reported to Stripe meter events, once per ledger row', () => {
  let w: BillingWorld;
  let outbox: FakeUsageOutbox;
  let customers: Record<string, string>;

  const meter = (config: Partial<Pick<BillingWorkerConfig, 'METER_BATCH_SIZE' | 'METER_CONCURRENCY'>> = {}) =>
    new UsageMeterService(inlineTransactions, w.stripe, { METER_BATCH_SIZE: 100, METER_CONCURRENCY: 4, METER_EVENT_NAME: 'flagship_ai_usage', ...config }, outbox, w.billing, w.sync, w.metrics, w.pricing);
  const sent = () => w.stripe.meterEvents.map((e) => e.identifier);
  const counted = async (outcome: string) => (await w.metrics.meterEvents.get()).values.find((v) => v.labels['outcome'] === outcome)?.value ?? 0;

  beforeEach(() => {
    w = billingWorld();
    outbox = new FakeUsageOutbox();
    customers = {};
    w.sync.seedTenant(A, 'Alpha', 'ops@alpha.test');
    w.sync.seedTenant(B, 'Beta', 'ops@beta.test');
    w.billing.members.push({ tenantId: A, email: 'owner@alpha.test', role: 'admin', signedIn: true });
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  const customerOf = async (tenantId: string, productKey = 'core') => (customers[`${tenantId}:${productKey}`] ??= (await w.billing.customer(tenantId, productKey))!.stripeCustomerId);

  it('sends each billable row once: its id as identifier, its debit as value, when it completed; then marks it', async () => {
    const rows = [outbox.add({ tenantId: A, debit: 1_000_000 }), outbox.add({ tenantId: B, debit: 250, productKey: 'insights' }), outbox.add({ tenantId: A, debit: 7 })];
    outbox.add({ tenantId: A, debit: 50, zeroRated: true });
    outbox.add({ tenantId: A, debit: 50, status: 'failed' });
    expect(await meter().reportBatch()).toBe(3);
    expect(w.stripe.meterEvents.sort((x, y) => (x.identifier! < y.identifier! ? -1 : 1))).toEqual(
      await Promise.all(
        [...rows]
          .sort((x, y) => (x.id < y.id ? -1 : 1))
          .map(async (r) => ({
            event_name: 'flagship_ai_usage',
            identifier: r.id,
            timestamp: Math.floor(r.completedAt!.getTime() / 1000),
            payload: { stripe_customer_id: await customerOf(r.tenantId, r.productKey), value: String(r.debit), product_key: r.productKey },
          })),
      ),
    );
    expect(outbox.reported().sort()).toEqual(rows.map((r) => r.id).sort());
    expect(await meter().reportBatch()).toBe(0);
    expect(await counted('accepted')).toBe(3);
  });

  it('a customer per tenant and product key, made on first need with a member-proven e-mail, each with its usage subscription, before any event', async () => {
    outbox.add({ tenantId: B, debit: 10 });
    outbox.add({ tenantId: A, debit: 10 });
    await meter().reportBatch();
    const made = w.stripe.calls.filter((c) => c.method === 'createCustomer').map((c) => [(c.args[0] as Stripe.CustomerCreateParams).email, c.args[1]]);
    expect(made).toEqual([
      ['owner@alpha.test', `flagship-customer-${A}-core`],
      [undefined, `flagship-customer-${B}-core`],
    ]);
    // Subscriptions are taken in a stable order, so two replicas' locks never cross.
    expect(w.sync.locks).toEqual([`usage-subscription:${await customerOf(A)}`, `usage-subscription:${await customerOf(B)}`]);
    const firstEvent = w.stripe.calls.findIndex((c) => c.method === 'sendMeterEvent');
    const lastSubscription = w.stripe.calls.map((c) => c.method).lastIndexOf('createSubscription');
    expect(lastSubscription).toBeGreaterThan(0);
    expect(lastSubscription).toBeLessThan(firstEvent);
    expect(await w.billing.usageSubscriptionId(A, 'core')).toEqual(expect.stringMatching(/^sub_/));
  });

  it('batches of METER_BATCH_SIZE, oldest first; the job runs again at once while a batch had rows', async () => {
    const rows = Array.from({ length: 5 }, (_, i) => outbox.add({ tenantId: A, completedAt: new Date(Date.now() - (10 - i) * 60_000) }));
    const job = usageMeterJob(meter({ METER_BATCH_SIZE: 2 }), { METER_POLL_MS: 2000 } as BillingWorkerConfig);
    const runs: Array<boolean | void> = [];
    for (let i = 0; i < 4; i++) runs.push(await job.run(new AbortController().signal));
    expect(runs).toEqual([true, true, true, false]);
    expect(sent()).toEqual(rows.map((r) => r.id));
  });

  it("a row older than Stripe's 35 days is reported as of an hour inside them", async () => {
    const old = outbox.add({ tenantId: A, completedAt: new Date(Date.now() - 40 * DAY_S * 1000) });
    const before = Math.floor(Date.now() / 1000);
    await meter().reportBatch();
    const ts = w.stripe.meterEvents.find((e) => e.identifier === old.id)!.timestamp!;
    expect(ts).toBeGreaterThanOrEqual(before - 35 * DAY_S + 3600);
    expect(ts).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) - 35 * DAY_S + 3600);
  });

  it('Stripe failing mid-batch: what it accepted is marked and the failure thrown; the next run sends the rest, none twice', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => outbox.add({ tenantId: A, completedAt: new Date(Date.now() - (10 - i) * 60_000) }));
    let sends = 0;
    w.stripe.failing = (method) => method === 'sendMeterEvent' && ++sends === 3;
    await expect(meter({ METER_CONCURRENCY: 1 }).reportBatch()).rejects.toThrow(/down/);
    expect(outbox.reported()).toEqual(rows.slice(0, 2).map((r) => r.id));
    expect(await meter({ METER_CONCURRENCY: 1 }).reportBatch()).toBe(4);
    expect(sent()).toEqual(rows.map((r) => r.id));
  });

  it('a row Stripe took before its mark was lost (a crash between them) is refused as a duplicate, counted as delivered, and marked', async () => {
    const row = outbox.add({ tenantId: A, debit: 42 });
    await meter().reportBatch();
    outbox.rows[0]!.meterReportedAt = null;
    expect(await meter().reportBatch()).toBe(1);
    expect(w.stripe.meterEvents.map((e) => e.identifier)).toEqual([row.id]);
    expect(outbox.reported()).toEqual([row.id]);
    expect([await counted('accepted'), await counted('duplicate')]).toEqual([1, 1]);
  });

  it('Stripe down before the batch starts (the meter, a customer): nothing sent, nothing marked', async () => {
    outbox.add({ tenantId: A });
    w.stripe.down = true;
    await expect(meter().reportBatch()).rejects.toThrow(/down/);
    w.stripe.down = false;
    w.stripe.failing = (method) => method === 'createCustomer';
    await expect(meter().reportBatch()).rejects.toThrow(/down/);
    expect([w.stripe.meterEvents, outbox.reported()]).toEqual([[], []]);
    w.stripe.failing = undefined;
    expect(await meter().reportBatch()).toBe(1);
  });

  it("a tenant that is gone has its rows left unsent and unmarked; the others' go", async () => {
    const gone = '00000000-0000-4000-8000-0000000000c3';
    outbox.add({ tenantId: gone });
    const kept = outbox.add({ tenantId: A });
    expect(await meter().reportBatch()).toBe(1);
    expect([sent(), outbox.reported()]).toEqual([[kept.id], [kept.id]]);
    expect(w.stripe.count('createCustomer')).toBe(1);
  });

  it('many rows with concurrent sends: every one once', async () => {
    const rows: UsageRow[] = Array.from({ length: 60 }, (_, i) => outbox.add({ tenantId: i % 2 ? A : B, debit: i + 1 }));
    expect(await meter({ METER_CONCURRENCY: 8, METER_BATCH_SIZE: 50 }).reportBatch()).toBe(50);
    expect(await meter({ METER_CONCURRENCY: 8, METER_BATCH_SIZE: 50 }).reportBatch()).toBe(10);
    expect(new Set(sent())).toEqual(new Set(rows.map((r) => r.id)));
    expect(sent()).toHaveLength(60);
  });
});
