/**
 * Billing end to end with the BUILT apps as processes (`npx nx run-many -t build -p
 * management-api,billing-worker,ai-gateway` first): management-api creates the Stripe sessions, the
 * customer pays or confirms on the fake Stripe's hosted pages (as a browser would), Stripe's signed
 * webhooks reach billing-worker, and the plan shows in management-api. The SDK drives the API. A
 * credit purchase lets the gateway (driven by the `openai` SDK, the fake model upstream behind it)
 * answer a tenant it refused with 402. Then usage metering through a billing-worker killed with
 * SIGKILL mid-batch.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { Client } from 'pg';
import type Stripe from 'stripe';
import { FlagshipClient } from '@flagship/sdk';
import { createTestEnvironment, FakeModelUpstream, FakeStripe, freePort, http, type TestEnvironment, waitFor } from '@flagship/testing';

const DIST = join(__dirname, '../../../dist/apps');
const API_JS = join(DIST, 'management-api/apps/management-api/src/main.js');
const WORKER_JS = join(DIST, 'billing-worker/apps/billing-worker/src/main.js');
const GATEWAY_JS = join(DIST, 'ai-gateway/apps/ai-gateway/src/main.js');
const SECRET = 'whsec_e2e';

interface Proc {
  url: string;
  child: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

async function start(main: string, env: NodeJS.ProcessEnv): Promise<Proc> {
  if (!existsSync(main)) throw new Error(`${main} is missing: build the app first`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [main], { env: { ...env, HOST: '127.0.0.1', PORT: String(port), PUBLIC_BASE_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output += c));
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`${main} exited ${child.exitCode}: ${output}`);
    return (await http(`${url}/healthz`).catch(() => ({ status: 0 }))).status === 200;
  }, 30000, 100).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`${String(err)}\n${output}`);
  });
  return {
    url,
    child,
    output: () => output,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        await once(child, 'exit');
      }
    },
  };
}

describe('billing end to end: built management-api and billing-worker, fake Stripe, SDK', () => {
  let te: TestEnvironment;
  let fake: FakeStripe;
  let stripe: Stripe;
  let env: NodeJS.ProcessEnv;
  let api: Proc;
  let worker: Proc;
  let gateway: Proc;
  let model: FakeModelUpstream;
  let db: Client;
  let admin: FlagshipClient;
  let idToken: string;
  let tenantId: string;
  const urls = { successUrl: 'http://localhost:5173/billing/done', cancelUrl: 'http://localhost:5173/billing' };

  beforeAll(async () => {
    te = await createTestEnvironment({ IDP_MODE: 'dev', RATE_LIMIT_IP_PER_MINUTE: '100000' });
    fake = await FakeStripe.start({ apiKey: 'sk_test_e2e', webhookSecret: SECRET });
    stripe = fake.client();
    const price = async (name: string, cents: number) => {
      const product = await stripe.products.create({ name });
      return (await stripe.prices.create({ product: product.id, currency: 'usd', unit_amount: cents, recurring: { interval: 'month' } })).id;
    };
    env = {
      ...te.env,
      STRIPE_SECRET_KEY: 'sk_test_e2e',
      STRIPE_WEBHOOK_SECRET: SECRET,
      STRIPE_API_BASE: fake.url,
      STRIPE_PRICE_FREE: await price('Free', 0),
      STRIPE_PRICE_STANDARD: await price('Standard', 1900),
      STRIPE_PRICE_PREMIUM: await price('Premium', 4900),
      STRIPE_MAX_NETWORK_RETRIES: '0',
      WEBHOOK_INBOX_POLL_MS: '200',
      METER_POLL_MS: '100',
      STRIPE_BACKOFF_MAX_MS: '500',
    };
    api = await start(API_JS, env);
    worker = await start(WORKER_JS, env);
    fake.webhookUrl = `${worker.url}/webhooks/stripe`;
    model = await FakeModelUpstream.start();
    // Tokens are management-api's (its issuer is its own address); the model provider is the fake upstream.
    gateway = await start(GATEWAY_JS, { ...env, OAUTH_ISSUER: api.url, OAUTH_AUDIENCE: 'flagship-api', PROVIDER_INHOUSE_URL: model.url, PROVIDER_MAX_RETRIES: '0' });
    db = new Client({ connectionString: te.db.url });
    await db.connect();
    const email = `owner-${Date.now()}@flagship.test`;
    idToken = (await http<{ idToken: string }>(`${api.url}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'correct-horse-1' } })).body.idToken;
    const signup = await http<{ data: { canonical_tenant_id: string } }>(`${api.url}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: 'correct-horse-1' } });
    tenantId = signup.body.data.canonical_tenant_id;
    admin = new FlagshipClient({ baseUrl: api.url, tenantId, auth: { idToken }, maxRetries: 0 });
  }, 90000);

  afterAll(async () => {
    await fake?.settled();
    await api?.stop();
    await worker?.stop();
    await gateway?.stop();
    await model?.close();
    await fake?.close();
    await db?.end();
    await te?.teardown();
  });

  /** What a browser does on the fake's hosted page: press the button, follow Stripe's redirect. */
  async function press(pageUrl: string, action: 'complete' | 'confirm'): Promise<string> {
    const page = await http<string>(pageUrl);
    expect(page.status).toBe(200);
    const res = await fetch(`${pageUrl}/${action}`, { method: 'POST', redirect: 'manual' });
    expect(res.status).toBe(303);
    await fake.settled();
    return res.headers.get('location') ?? '';
  }

  /** A backend of the tenant, as product backends call the gateway: an OAuth client of management-api, its token, the openai SDK. */
  async function gatewayClient(name: string): Promise<OpenAI> {
    const created = await http<{ clientId: string; clientSecret: string }>(`${api.url}/api/oauth/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${idToken}`, 'x-tenant-id': tenantId },
      json: { name, scopes: ['ai:invoke'] },
    });
    expect(created.status).toBe(201);
    const token = await http<{ access_token: string }>(`${api.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: created.body.clientId, client_secret: created.body.clientSecret }).toString(),
    });
    expect(token.status).toBe(200);
    return new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: token.body.access_token, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });
  }

  const plan = async (want: string, cancelAtPeriodEnd = false) =>
    waitFor(async () => {
      const s = await admin.subscription.get();
      return s.plan === want && s.cancelAtPeriodEnd === cancelAtPeriodEnd ? s : undefined;
    }, 15000, 100);

  it('new checkout: the tenant pays on Stripe Checkout and management-api shows the premium plan', async () => {
    expect(await admin.subscription.get()).toMatchObject({ id: null, plan: 'free' });
    const { url } = await admin.subscription.checkout('premium', urls);
    expect(url.startsWith(`${fake.url}/checkout/`)).toBe(true);
    expect(await press(url, 'complete')).toBe(urls.successUrl);
    const sub = await plan('premium');
    expect(sub).toMatchObject({ status: 'active', productKey: 'core' });
    expect(sub.id).toMatch(/^sub_/);
    const ent = await db.query(`SELECT tier, source FROM entitlements WHERE tenant_id = $1 AND product_key = 'core'`, [tenantId]);
    expect(ent.rows).toEqual([{ tier: 'enterprise', source: 'plan' }]);
  });

  it('a plan change through the portal flow (downgrade, then back up), each confirmed on the portal page', async () => {
    const down = await admin.subscription.checkout('standard', urls);
    expect(down.url.startsWith(`${fake.url}/portal/`)).toBe(true);
    expect(await press(down.url, 'confirm')).toBe(urls.successUrl);
    await plan('standard');
    expect((await db.query(`SELECT 1 FROM entitlements WHERE tenant_id = $1`, [tenantId])).rows).toEqual([]);
    const up = await admin.subscription.checkout('premium', urls);
    await press(up.url, 'confirm');
    await plan('premium');
    // Still one subscription with one item: switched, not added.
    const subs = await stripe.subscriptions.list({ customer: (await db.query(`SELECT stripe_customer_id FROM billing_customers WHERE tenant_id = $1`, [tenantId])).rows[0].stripe_customer_id });
    expect(subs.data).toHaveLength(1);
    expect(subs.data[0].items.data).toHaveLength(1);
  });

  it('cancellation at period end (as the portal does it) shows, and the plan holds until the end', async () => {
    const { id } = await admin.subscription.get();
    await stripe.subscriptions.update(id!, { cancel_at_period_end: true });
    await fake.settled();
    const s = await plan('premium', true);
    expect(s.status).toBe('active');
    const portal = await admin.subscription.portal(urls.cancelUrl);
    expect(portal.url.startsWith(`${fake.url}/portal/`)).toBe(true);
  });

  it('a credit purchase turns a 402 at the gateway into a 200, and lands on the balance once', async () => {
    const balance = async () => Number((await db.query(`SELECT balance FROM credit_balances WHERE tenant_id = $1`, [tenantId])).rows[0]?.balance ?? 0);
    const openai = await gatewayClient('backend');
    const chat = { model: 'fake-chat-1', messages: [{ role: 'user' as const, content: 'hello there' }] };

    // Entitled (the premium plan grants enterprise for core) but without credit: 402 before the model is called.
    expect(await balance()).toBe(0);
    model.reset();
    const refused = await openai.chat.completions.create(chat).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(APIError);
    expect((refused as APIError).status).toBe(402);
    expect((refused as APIError).code).toBe('insufficient_credits');
    expect(model.totalCalls).toBe(0);

    // POST /api/billing/checkout type credits, paid on the fake Checkout page, the signed webhook processed by billing-worker.
    const { url } = await admin.subscription.buyCredits(1000, urls);
    expect(url.startsWith(`${fake.url}/checkout/`)).toBe(true);
    await press(url, 'complete');
    await waitFor(async () => (await balance()) === 1000 * 10000, 15000);

    const answered = await openai.chat.completions.create(chat);
    expect(answered.choices[0]!.message.content).toBe('echo: hello there');
    expect(model.calls.chat).toBe(1);

    // A client of the same tenant made for reading flags cannot spend those credits; one with no scope cannot be made.
    const reader = await http<{ clientId: string; clientSecret: string }>(`${api.url}/api/oauth/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${idToken}`, 'x-tenant-id': tenantId },
      json: { name: 'flag reader', scopes: ['flags:read'] },
    });
    const readerToken = await http<{ access_token: string; scope: string }>(`${api.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: reader.body.clientId, client_secret: reader.body.clientSecret }).toString(),
    });
    expect(readerToken.body.scope).toBe('flags:read');
    const asReader = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: readerToken.body.access_token, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
    const denied = await asReader.chat.completions.create(chat).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(APIError);
    expect(denied).toMatchObject({ status: 403, code: 'insufficient_scope', type: 'permission_error' });
    expect(model.calls.chat).toBe(1);
    const noScope = await http<{ errors: Record<string, string> }>(`${api.url}/api/oauth/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${idToken}`, 'x-tenant-id': tenantId },
      json: { name: 'nothing', scopes: [] },
    });
    expect([noScope.status, Object.keys(noScope.body.errors)]).toEqual([422, ['scopes']]);

    // The checkout's event delivered again changes nothing: the credits were granted once.
    const completed = fake.eventsOfType('checkout.session.completed').at(-1)!;
    await fake.redeliver(completed['id'] as string);
    await waitFor(async () => Number((await db.query(`SELECT count(*) AS n FROM stripe_events WHERE processed_at IS NULL`)).rows[0].n) === 0, 15000);
    expect(Number((await db.query(`SELECT count(*) AS n FROM billing_ledger WHERE tenant_id = $1 AND kind = 'credit_purchase'`, [tenantId])).rows[0].n)).toBe(1);
    // The one answered call is debited, once: bought credits less a few micro-credits.
    await waitFor(async () => (await balance()) < 1000 * 10000, 15000);
    expect(await balance()).toBeGreaterThan(1000 * 10000 - 1000);
  });

  it('a dispute of that purchase takes its credits back and pauses the tenant at the gateway (403 account_paused); won, both come back; a refund takes back its share', async () => {
    const balance = async () => Number((await db.query(`SELECT balance FROM credit_balances WHERE tenant_id = $1`, [tenantId])).rows[0]?.balance ?? 0);
    const openai = await gatewayClient('disputed backend');
    const chat = { model: 'fake-chat-1', messages: [{ role: 'user' as const, content: 'still there?' }] };
    const outcome = async () => {
      try {
        await openai.chat.completions.create(chat);
        return 200;
      } catch (err) {
        return err instanceof APIError ? `${err.status} ${String(err.code)}` : String(err);
      }
    };
    expect(await outcome()).toBe(200);
    const before = await balance();
    const customer = (await db.query(`SELECT stripe_customer_id FROM billing_customers WHERE tenant_id = $1 AND product_key = 'core'`, [tenantId])).rows[0].stripe_customer_id as string;
    const [charge] = (await stripe.charges.list({ customer })).data;
    expect(charge).toMatchObject({ amount: 1000, amount_refunded: 0 });

    // The cardholder disputes the purchase with their bank: credits taken back, the gateway refuses before the model is called.
    const dispute = fake.openDispute(charge.id);
    await waitFor(async () => (await outcome()) === '403 account_paused', 15000, 100);
    const calls = model.totalCalls;
    const paused = await openai.chat.completions.create(chat).catch((e: unknown) => e);
    expect(paused).toMatchObject({ status: 403, code: 'account_paused', type: 'permission_error' });
    expect(model.totalCalls).toBe(calls);
    // Less the few micro-credits the calls answered before the pause reached the gateway cost.
    expect(await balance()).toBeLessThanOrEqual(before - 1000 * 10000);
    expect(await balance()).toBeGreaterThan(before - 1000 * 10000 - 50_000);

    // Won: the credits and the access come back.
    fake.closeDispute(dispute['id'] as string, 'won');
    await waitFor(async () => (await outcome()) === 200, 15000, 100);
    await waitFor(async () => (await balance()) > before - 1000 * 10000, 15000);
    const restored = await balance();
    expect(restored).toBeGreaterThan(before - 50_000);

    // A quarter refunded through Stripe's API: a quarter of the credits go.
    await stripe.refunds.create({ charge: charge.id, amount: 250 });
    await waitFor(async () => (await balance()) <= restored - 250 * 10000, 15000);
    expect(await balance()).toBeGreaterThan(restored - 250 * 10000 - 50_000);
  });

  it('meter events after a billing-worker killed (SIGKILL) mid-batch: none lost, none doubled in Stripe', async () => {
    await worker.stop();
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) {
      const r = await db.query<{ id: string }>(
        `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, completed_at)
         VALUES ($1, 'c', 'core', 'inhouse', 'm', 'chat.completions', 'succeeded', $2, now()) RETURNING id`,
        [tenantId, 1 + i],
      );
      ids.push(r.rows[0].id);
    }
    const set = new Set(ids);
    const sent = () => fake.meterEvents.filter((e) => set.has(e.identifier)).length;
    fake.delayMs = 30;
    const doomed = await start(WORKER_JS, { ...env, METER_BATCH_SIZE: '300', METER_CONCURRENCY: '2' });
    await waitFor(async () => sent() >= 20, 20000, 20);
    await doomed.stop('SIGKILL');
    const beforeRestart = sent();
    const marked = Number((await db.query(`SELECT count(*) AS n FROM usage_ledger WHERE id = ANY($1::uuid[]) AND meter_reported_at IS NOT NULL`, [ids])).rows[0].n);
    expect(beforeRestart).toBeGreaterThan(0);
    expect(beforeRestart).toBeLessThan(300);
    expect(marked).toBe(0); // Stripe holds part of the batch, the database none of it
    fake.delayMs = 0;
    worker = await start(WORKER_JS, env);
    fake.webhookUrl = `${worker.url}/webhooks/stripe`;
    await waitFor(async () => Number((await db.query(`SELECT count(*) AS n FROM usage_ledger WHERE id = ANY($1::uuid[]) AND meter_reported_at IS NULL`, [ids])).rows[0].n) === 0, 30000);
    const events = fake.meterEvents.filter((e) => set.has(e.identifier));
    expect(events).toHaveLength(300);
    expect(new Set(events.map((e) => e.identifier)).size).toBe(300);
    expect(events.reduce((s, e) => s + Number(e.payload['value']), 0)).toBe((300 * 301) / 2);
    // Invoiceable: the customer has one usage subscription on the metered price, apart from its single-item plan subscription.
    const customer = (await db.query(`SELECT stripe_customer_id FROM billing_customers WHERE tenant_id = $1 AND product_key = 'core'`, [tenantId])).rows[0].stripe_customer_id as string;
    const subs = (await stripe.subscriptions.list({ customer })).data;
    const metered = subs.filter((s) => s.items.data.every((i) => i.price.recurring?.usage_type === 'metered'));
    expect(metered).toHaveLength(1);
    expect(metered[0].items.data).toHaveLength(1);
    const plans = subs.filter((s) => !metered.includes(s));
    expect(plans).toHaveLength(1);
    expect(plans[0].items.data).toHaveLength(1);
  });
});
