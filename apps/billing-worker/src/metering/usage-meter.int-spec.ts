import { Client } from 'pg';
import type Stripe from 'stripe';
import { createTestEnvironment, FakeStripe, waitFor, type TestEnvironment } from '@flagship/testing';
import { createPlans, type Plans, startWorker, stripeEnv, WEBHOOK_SECRET } from '../testing/billing-worker.fixture';

/**
 * Usage metering against the fake Stripe's record of meter events: billable ledger rows reported
 * once each, by one replica or two at once, through a crash mid-batch and an outage.
 */
describe('billing-worker: usage metered to Stripe meter events exactly once', () => {
  let te: TestEnvironment;
  let fake: FakeStripe;
  let stripe: Stripe;
  let plans: Plans;
  let db: Client;
  let env: NodeJS.ProcessEnv;
  let tenants: string[];
  const workers: Array<Awaited<ReturnType<typeof startWorker>>> = [];

  beforeAll(async () => {
    te = await createTestEnvironment();
    fake = await FakeStripe.start({ apiKey: 'sk_test_meter', webhookSecret: WEBHOOK_SECRET });
    stripe = fake.client();
    plans = await createPlans(stripe);
    env = { ...te.env, ...stripeEnv(fake, plans), METER_BATCH_SIZE: '50', METER_CONCURRENCY: '4', METER_POLL_MS: '50' };
    db = new Client({ connectionString: te.db.url });
    await db.connect();
    tenants = [];
    for (const name of ['Meter A', 'Meter B', 'Meter C']) {
      tenants.push((await db.query<{ id: string }>(`INSERT INTO tenants (name, primary_email) VALUES ($1, 'm@example.test') RETURNING id`, [name])).rows[0].id);
    }
    // Meter A has an admin who signed in; B has only a member added by e-mail who never did (it proves nothing).
    const member = async (tenantId: string, subject: string, email: string) => {
      const user = (await db.query<{ id: string }>(`INSERT INTO users (idp_subject, email) VALUES ($1, $2) RETURNING id`, [subject, email])).rows[0].id;
      await db.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'admin')`, [tenantId, user]);
    };
    await member(tenants[0], 'idp-subject-a', 'owner-a@example.test');
    await member(tenants[1], 'pending:m@example.test', 'm@example.test');
  });

  afterAll(async () => {
    for (const w of workers) await w.close().catch(() => undefined);
    await fake?.close();
    await db?.end();
    await te?.teardown();
  });

  /** Gateway usage rows as the gateway writes them; answers the ids of the billable ones. */
  async function usage(n: number, opts: { nonBillable?: boolean } = {}): Promise<string[]> {
    const billable: string[] = [];
    for (let i = 0; i < n; i++) {
      const tenant = tenants[i % tenants.length];
      const r = await db.query<{ id: string }>(
        `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, input_tokens, output_tokens, completed_at)
         VALUES ($1, 'client-1', 'core', 'inhouse', 'm-1', 'chat.completions', 'succeeded', $2, 10, 20, now() - interval '1 minute') RETURNING id`,
        [tenant, 100 + i],
      );
      billable.push(r.rows[0].id);
    }
    if (opts.nonBillable) {
      const t = tenants[0];
      const rows = [
        `(${"'" + t + "'"}, 'c', 'insights', 'inhouse', 'm', 'embeddings', 'succeeded', 0, true, now())`,
        `(${"'" + t + "'"}, 'c', 'core', 'inhouse', 'm', 'embeddings', 'succeeded', 50, true, now())`,
        `(${"'" + t + "'"}, 'c', 'core', 'inhouse', 'm', 'embeddings', 'failed', 50, false, now())`,
        `(${"'" + t + "'"}, 'c', 'core', 'inhouse', 'm', 'embeddings', 'pending', 0, false, NULL)`,
        `(${"'" + t + "'"}, 'c', 'core', 'inhouse', 'm', 'embeddings', 'succeeded', 0, false, now())`,
      ];
      await db.query(`INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, zero_rated, completed_at) VALUES ${rows.join(', ')}`);
    }
    return billable;
  }

  const unreported = async (ids: string[]) => Number((await db.query(`SELECT count(*) AS n FROM usage_ledger WHERE id = ANY($1::uuid[]) AND meter_reported_at IS NULL`, [ids])).rows[0].n);
  const accepted = (ids: Set<string>) => fake.meterEvents.filter((e) => ids.has(e.identifier));
  const sends = (ids: Set<string>) => fake.requests.filter((r) => r.path === '/v1/billing/meter_events' && ids.has(String(r.params['identifier'])));

  it('reports every billable row once, with its id as identifier and its debit as value, and nothing else', async () => {
    workers.push(await startWorker(env));
    const ids = await usage(120, { nonBillable: true });
    await waitFor(async () => (await unreported(ids)) === 0, 20000);
    const events = fake.meterEvents;
    expect(events.map((e) => e.identifier).sort()).toEqual([...ids].sort());
    const { rows } = await db.query(`SELECT id, debit, completed_at, tenant_id FROM usage_ledger WHERE id = ANY($1::uuid[])`, [ids]);
    const customers = new Map((await db.query(`SELECT tenant_id, stripe_customer_id FROM billing_customers WHERE product_key = 'core'`)).rows.map((r) => [r.tenant_id, r.stripe_customer_id]));
    // The customers billing-worker created: the e-mail of a member who signed in, never the typed-in primary_email.
    const emails = await Promise.all(tenants.map(async (t) => ((await stripe.customers.retrieve(customers.get(t))) as Stripe.Customer).email));
    expect(emails).toEqual(['owner-a@example.test', null, null]);
    for (const r of rows) {
      const e = events.find((x) => x.identifier === r.id)!;
      expect(e).toMatchObject({ event_name: 'flagship_ai_usage', timestamp: Math.floor(r.completed_at.getTime() / 1000) });
      expect(e.payload).toEqual({ stripe_customer_id: customers.get(r.tenant_id), value: String(r.debit), product_key: 'core' });
    }
    // Zero-rated, failed, pending and zero-debit rows stay out of Stripe, and unmarked.
    expect(Number((await db.query(`SELECT count(*) AS n FROM usage_ledger WHERE meter_reported_at IS NOT NULL`)).rows[0].n)).toBe(ids.length);
    expect(customers.size).toBe(3);
  });

  it('two replicas reporting at once never send a row twice', async () => {
    workers.push(await startWorker(env));
    fake.delayMs = 2;
    const ids = await usage(600);
    const set = new Set(ids);
    await waitFor(async () => (await unreported(ids)) === 0, 60000);
    fake.delayMs = 0;
    expect(accepted(set)).toHaveLength(600);
    // Not one send per row refused as a duplicate: the replicas never overlapped.
    const sent = sends(set);
    expect(sent).toHaveLength(600);
    expect(sent.every((r) => r.status === 200)).toBe(true);
    expect(new Set(sent.map((r) => r.params['identifier'])).size).toBe(600);
  });

  it('backs off while Stripe is down and reports the rest when it returns, losing and doubling nothing', async () => {
    await fake.setMode('error');
    const ids = await usage(90);
    const set = new Set(ids);
    await new Promise((r) => setTimeout(r, 800));
    expect(await unreported(ids)).toBe(90);
    await fake.setMode('up');
    await waitFor(async () => (await unreported(ids)) === 0, 20000);
    expect(accepted(set)).toHaveLength(90);
    expect(new Set(accepted(set).map((e) => e.identifier)).size).toBe(90);
    // While down, a batch stops at its first failure and the job backs off: far fewer sends than rows.
    const during = fake.requests.filter((r) => r.path === '/v1/billing/meter_events' && r.status === 500).length;
    expect(during).toBeGreaterThan(0);
    expect(during).toBeLessThan(90);
  });

  it('a worker killed mid-batch loses nothing and doubles nothing: the next one resends, Stripe refuses the duplicates, they count as delivered', async () => {
    for (const w of workers.splice(0)) await w.close();
    fake.delayMs = 40;
    const ids = await usage(200);
    const crashing = await startWorker({ ...env, METER_BATCH_SIZE: '200', METER_CONCURRENCY: '2' });
    const set = new Set(ids);
    await waitFor(async () => accepted(set).length >= 10, 20000);
    // The crash, as Postgres sees it: the session holding the batch dies; its transaction (the marks) is gone.
    await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'billing-worker' AND pid <> pg_backend_pid()`,
    );
    await crashing.close().catch(() => undefined);
    const sentBeforeCrash = accepted(set).length;
    expect(sentBeforeCrash).toBeGreaterThan(0);
    expect(await unreported(ids)).toBe(200); // Stripe has some, none is marked: the dangerous state
    fake.delayMs = 0;
    workers.push(await startWorker(env));
    await waitFor(async () => (await unreported(ids)) === 0, 30000);
    const events = accepted(set);
    expect(events).toHaveLength(200);
    expect(new Set(events.map((e) => e.identifier))).toEqual(set);
    const refused = sends(set).filter((r) => r.status === 400);
    expect(refused.length).toBeGreaterThanOrEqual(sentBeforeCrash);
  });
});
