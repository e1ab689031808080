import { Client } from 'pg';
import type Stripe from 'stripe';
import type { SecretReader } from '@flagship/billing';
import { CHANNELS, createRedis, RedisKeys, RedisPubSub } from '@flagship/redis';
import { bootstrapService, type RunningApp, runningApp } from '@flagship/service-kit';
import { createTestEnvironment, FakeStripe, freePort, type TestEnvironment } from '@flagship/testing';
import { AppModule, RAW_BODY_PATHS } from '../app.module';
import { loadBillingWorkerConfig } from '../env.schema';

export const WEBHOOK_SECRET = 'whsec_test_billing_worker';

export interface Plans {
  free: Stripe.Price;
  standard: Stripe.Price;
  premium: Stripe.Price;
}

/** Three plan prices on the fake, each on its own product, as an operator would set them up. */
export async function createPlans(stripe: Stripe): Promise<Plans> {
  const price = async (name: string, amount: number) => {
    const product = await stripe.products.create({ name });
    return stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: amount, recurring: { interval: 'month' } });
  };
  return { free: await price('Free', 0), standard: await price('Standard', 1900), premium: await price('Premium', 4900) };
}

export function stripeEnv(fake: FakeStripe, plans: Plans): NodeJS.ProcessEnv {
  return {
    STRIPE_SECRET_KEY: [...fake.apiKeys][0],
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_PRICE_FREE: plans.free.id,
    STRIPE_PRICE_STANDARD: plans.standard.id,
    STRIPE_PRICE_PREMIUM: plans.premium.id,
    STRIPE_API_BASE: fake.url,
    STRIPE_MAX_NETWORK_RETRIES: '0',
    STRIPE_TIMEOUT_MS: '3000',
    WEBHOOK_INBOX_POLL_MS: '100',
    METER_POLL_MS: '100',
    STRIPE_BACKOFF_MAX_MS: '300',
  };
}

/** One billing-worker replica in this process, started as main.ts starts it (raw body on the webhook route). */
export async function startWorker(env: NodeJS.ProcessEnv, secrets?: SecretReader): Promise<RunningApp> {
  const config = loadBillingWorkerConfig(env);
  const port = await freePort();
  const app = await bootstrapService(AppModule.forConfig(config, secrets), { port, host: '127.0.0.1', handleSignals: false, rawBodyPaths: RAW_BODY_PATHS });
  return runningApp(app);
}

/** A worker with its own database and Redis prefix, the fake Stripe sending it signed webhooks, and a subscriber to tenant-changed. */
export interface WorkerStack {
  te: TestEnvironment;
  fake: FakeStripe;
  stripe: Stripe;
  plans: Plans;
  worker: RunningApp;
  db: Client;
  /** Tenant ids announced on tenant-changed (what the gateway hears), in order. */
  changed: string[];
  stop(): Promise<void>;
}

export async function startWorkerStack(apiKey: string): Promise<WorkerStack> {
  const te = await createTestEnvironment();
  const fake = await FakeStripe.start({ apiKey, webhookSecret: WEBHOOK_SECRET });
  const stripe = fake.client();
  const plans = await createPlans(stripe);
  const worker = await startWorker({ ...te.env, ...stripeEnv(fake, plans) });
  fake.webhookUrl = `${worker.url}/webhooks/stripe`;
  const db = new Client({ connectionString: te.db.url });
  await db.connect();
  const publisher = createRedis({ url: te.redis.url, name: 'test' });
  const pubsub = new RedisPubSub(publisher, new RedisKeys(te.redis.prefix), te.redis.url, 'test');
  const changed: string[] = [];
  await pubsub.subscribe(CHANNELS.tenantChanged, (m) => changed.push(m.tenantId));
  return {
    te,
    fake,
    stripe,
    plans,
    worker,
    db,
    changed,
    stop: async () => {
      await fake.settled();
      await worker.close();
      await fake.close();
      await db.end();
      await pubsub.close();
      publisher.disconnect();
      await te.teardown();
    },
  };
}

/** A tenant and its Stripe customer for `core`, as management-api creates them before a checkout. */
export async function createTenantWithCustomer(db: Client, stripe: Stripe, name = 'Acme'): Promise<{ tenantId: string; customerId: string }> {
  const { rows } = await db.query<{ id: string }>(`INSERT INTO tenants (name, primary_email) VALUES ($1, $2) RETURNING id`, [name, `${name.toLowerCase()}@example.test`]);
  const tenantId = rows[0].id;
  const customer = await stripe.customers.create({ name, metadata: { tenantId, productKey: 'core' } });
  await db.query(`INSERT INTO billing_customers (tenant_id, product_key, stripe_customer_id) VALUES ($1, 'core', $2)`, [tenantId, customer.id]);
  return { tenantId, customerId: customer.id };
}

/** A credit purchase as management-api starts it: a Checkout Session at Stripe, recorded with its amount for the tenant. */
export async function createCreditsCheckout(db: Client, stripe: Stripe, tenantId: string, customerId: string, amount: number): Promise<Stripe.Checkout.Session> {
  const session = await stripe.checkout.sessions.create({
    mode: 'payment',
    customer: customerId,
    client_reference_id: tenantId,
    line_items: [{ price_data: { currency: 'usd', unit_amount: amount, product_data: { name: 'credits' } }, quantity: 1 }],
    success_url: 'https://app.test/done',
    metadata: { tenantId, productKey: 'core', kind: 'credits' },
  });
  await db.query(`INSERT INTO checkout_sessions (stripe_session_id, tenant_id, product_key, kind, amount, currency) VALUES ($1, $2, 'core', 'credits', $3, 'usd')`, [
    session.id,
    tenantId,
    amount,
  ]);
  return session;
}

/** What the tenant's row, subscription and plan entitlement say now. */
export async function billingState(db: Client, tenantId: string) {
  const t = await db.query(`SELECT plan, subscription_status FROM tenants WHERE id = $1`, [tenantId]);
  const s = await db.query(
    `SELECT stripe_subscription_id, plan, status, cancel_at_period_end, current_period_end FROM billing_subscriptions WHERE tenant_id = $1 ORDER BY stripe_created DESC, stripe_subscription_id DESC`,
    [tenantId],
  );
  const e = await db.query(`SELECT product_key, tier, source FROM entitlements WHERE tenant_id = $1 ORDER BY product_key`, [tenantId]);
  const c = await db.query(`SELECT balance FROM credit_balances WHERE tenant_id = $1`, [tenantId]);
  return {
    plan: t.rows[0].plan as string,
    status: t.rows[0].subscription_status as string,
    subscriptions: s.rows as Array<{ stripe_subscription_id: string; plan: string | null; status: string; cancel_at_period_end: boolean; current_period_end: Date | null }>,
    entitlements: e.rows as Array<{ product_key: string; tier: string; source: string }>,
    balance: c.rows[0] ? Number(c.rows[0].balance) : 0,
  };
}
