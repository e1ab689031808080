import type { Client } from 'pg';
import type Stripe from 'stripe';
import { type FakeStripe, waitFor } from '@flagship/testing';
import { StripeEventsCatchUpService } from '../stripe/stripe-events-catch-up.service';
import { createCreditsCheckout, createTenantWithCustomer, startWorkerStack, type WorkerStack } from '../testing/billing-worker.fixture';

const PER_CENT = 10_000;

/**
 * Refunds and disputes of credit purchases through billing-worker's real webhook (signed events,
 * the inbox, Postgres, Redis), with Stripe played by the local fake and driven by the stripe SDK:
 * refunds made with `stripe.refunds.create`, disputes opened and closed as a bank would.
 */
describe('billing-worker: refunded and disputed credit purchases', () => {
  let stack: WorkerStack;
  let fake: FakeStripe;
  let stripe: Stripe;
  let worker: WorkerStack['worker'];
  let db: Client;
  let changed: string[];

  beforeAll(async () => {
    stack = await startWorkerStack('sk_test_reversals');
    ({ fake, stripe, worker, db, changed } = stack);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const balance = async (tenantId: string) => Number((await db.query(`SELECT balance FROM credit_balances WHERE tenant_id = $1`, [tenantId])).rows[0]?.balance ?? 0);
  const purchase = async (sessionId: string) =>
    (
      await db.query(
        `SELECT stripe_payment_intent_id AS pi, amount_refunded::int AS refunded, amount_disputed::int AS disputed, credits_taken_back::bigint::text AS taken, dispute_open AS open
         FROM credit_purchases WHERE stripe_session_id = $1`,
        [sessionId],
      )
    ).rows[0] as { pi: string | null; refunded: number; disputed: number; taken: string; open: boolean } | undefined;
  const settled = async () => {
    await fake.settled();
    await waitFor(async () => Number((await db.query(`SELECT count(*) AS n FROM stripe_events WHERE processed_at IS NULL`)).rows[0].n) === 0, 15000);
  };

  /** A tenant that bought `cents` of credits and was granted them; its purchase's payment intent and charge. */
  async function bought(name: string, cents: number): Promise<{ tenantId: string; sessionId: string; pi: string; chargeId: string }> {
    const { tenantId, customerId } = await createTenantWithCustomer(db, stripe, name);
    const session = await createCreditsCheckout(db, stripe, tenantId, customerId, cents);
    const pi = fake.completeCheckout(session.id)['payment_intent'] as string;
    await waitFor(async () => (await balance(tenantId)) === cents * PER_CENT, 15000);
    const [charge] = (await stripe.charges.list({ payment_intent: pi })).data;
    return { tenantId, sessionId: session.id, pi, chargeId: charge.id };
  }

  it("keeps each purchase's payment intent; refunds take back their share, the second only the difference, a redelivered event nothing", async () => {
    const p = await bought('Refunded', 2500);
    expect(await purchase(p.sessionId)).toEqual({ pi: p.pi, refunded: 0, disputed: 0, taken: '0', open: false });

    await stripe.refunds.create({ payment_intent: p.pi, amount: 1000 });
    await waitFor(async () => (await balance(p.tenantId)) === 1500 * PER_CENT, 15000);
    changed.length = 0;
    await stripe.refunds.create({ payment_intent: p.pi, amount: 500 });
    await waitFor(async () => (await balance(p.tenantId)) === 1000 * PER_CENT, 15000);
    await settled();
    expect(await purchase(p.sessionId)).toEqual({ pi: p.pi, refunded: 1500, disputed: 0, taken: String(1500 * PER_CENT), open: false });
    // The gateway was told (it re-reads the tenant).
    await waitFor(async () => changed.includes(p.tenantId));

    // Both refunds' events (charge.refunded, refund.created) delivered again: stored once, nothing moves.
    const ofCharge = fake.events.filter((e) => ['charge.refunded', 'refund.created'].includes(e['type'] as string) && JSON.stringify(e).includes(p.chargeId));
    expect(ofCharge).toHaveLength(4);
    for (const e of ofCharge) await fake.redeliver(e['id'] as string);
    await settled();
    expect(await balance(p.tenantId)).toBe(1000 * PER_CENT);
    const grants = await db.query(`SELECT amount::bigint::text AS amount, granted_by FROM credit_grants WHERE tenant_id = $1 ORDER BY id`, [p.tenantId]);
    expect(grants.rows).toEqual([
      { amount: String(2500 * PER_CENT), granted_by: 'stripe' },
      { amount: String(-1000 * PER_CENT), granted_by: 'stripe' },
      { amount: String(-500 * PER_CENT), granted_by: 'stripe' },
    ]);
  });

  it('a full refund of spent credits takes them all back: the balance goes negative', async () => {
    const p = await bought('Spent', 1000);
    await db.query(`UPDATE credit_balances SET balance = balance - $2 WHERE tenant_id = $1`, [p.tenantId, 900 * PER_CENT]);
    await stripe.refunds.create({ charge: p.chargeId });
    await waitFor(async () => (await balance(p.tenantId)) === -900 * PER_CENT, 15000);
    expect(await purchase(p.sessionId)).toMatchObject({ refunded: 1000, taken: String(1000 * PER_CENT) });
  });

  it('a dispute takes the credits back and marks the purchase open (the gateway pauses the tenant); won, both come back', async () => {
    const p = await bought('Disputed', 2000);
    const dispute = fake.openDispute(p.chargeId);
    await waitFor(async () => (await purchase(p.sessionId))?.open === true, 15000);
    expect(await balance(p.tenantId)).toBe(0);
    expect(await purchase(p.sessionId)).toMatchObject({ disputed: 2000, taken: String(2000 * PER_CENT) });
    changed.length = 0;
    fake.closeDispute(dispute['id'] as string, 'won');
    await waitFor(async () => (await purchase(p.sessionId))?.open === false, 15000);
    expect(await balance(p.tenantId)).toBe(2000 * PER_CENT);
    expect(await purchase(p.sessionId)).toMatchObject({ disputed: 0, taken: '0' });
    await waitFor(async () => changed.includes(p.tenantId));
  });

  it('a dispute lost (the merchant accepts it) keeps the credits taken back and ends the pause', async () => {
    const p = await bought('Lost', 1200);
    const dispute = fake.openDispute(p.chargeId, { amount: 600, reason: 'fraudulent' });
    await waitFor(async () => (await purchase(p.sessionId))?.open === true, 15000);
    expect(await balance(p.tenantId)).toBe(600 * PER_CENT);
    await stripe.disputes.close(dispute['id'] as string);
    await waitFor(async () => (await purchase(p.sessionId))?.open === false, 15000);
    expect(await balance(p.tenantId)).toBe(600 * PER_CENT);
    expect(await purchase(p.sessionId)).toMatchObject({ disputed: 600, taken: String(600 * PER_CENT) });
  });

  it('a purchase recorded before payment intents were kept is found through its Checkout Session at Stripe', async () => {
    const p = await bought('Legacy', 800);
    await db.query(`UPDATE credit_purchases SET stripe_payment_intent_id = NULL WHERE stripe_session_id = $1`, [p.sessionId]);
    await stripe.refunds.create({ charge: p.chargeId, amount: 200 });
    await waitFor(async () => (await balance(p.tenantId)) === 600 * PER_CENT, 15000);
    expect(await purchase(p.sessionId)).toMatchObject({ pi: p.pi, refunded: 200 });
  });

  it('a refund of a charge that is no credit purchase of ours takes nothing', async () => {
    const p = await bought('Bystander', 1000);
    // A payment made at Stripe outside our checkout: a session nobody recorded, paid and refunded.
    const { tenantId: elsewhere, customerId } = await createTenantWithCustomer(db, stripe, 'Elsewhere');
    const foreign = await stripe.checkout.sessions.create({
      mode: 'payment',
      customer: customerId,
      line_items: [{ price_data: { currency: 'usd', unit_amount: 5000, product_data: { name: 'something else' } }, quantity: 1 }],
      success_url: 'https://app.test/done',
    });
    const foreignPi = fake.completeCheckout(foreign.id)['payment_intent'] as string;
    await stripe.refunds.create({ payment_intent: foreignPi });
    await settled();
    expect(await balance(p.tenantId)).toBe(1000 * PER_CENT);
    expect(fake.eventsOfType('charge.refunded').some((e) => JSON.stringify(e).includes(foreignPi))).toBe(true);
    expect((await db.query(`SELECT count(*)::int AS n FROM credit_grants WHERE tenant_id = ANY($1::uuid[])`, [[elsewhere]])).rows[0].n).toBe(0);
    expect(await balance(elsewhere)).toBe(0);
  });

  it('lists the refund and dispute events in its catch-up (Stripe takes at most 20 types at once)', async () => {
    const p = await bought('Caught up', 1000);
    fake.deliverWebhooks = false;
    try {
      await stripe.refunds.create({ charge: p.chargeId, amount: 400 });
    } finally {
      fake.deliverWebhooks = true;
    }
    expect(await worker.app.get(StripeEventsCatchUpService).catchUp()).toBeGreaterThan(0);
    await waitFor(async () => (await balance(p.tenantId)) === 600 * PER_CENT, 15000);
  });
});
