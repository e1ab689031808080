/**
 * The usage reconciler through the real app (Nest module, scheduler started on bootstrap) against
 * this file's own Postgres database. Ledger rows are written with SQL exactly as the gateway writes
 * them: the reservation added to credit_balances.reserved and the `pending` row in one transaction.
 */
import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { Client } from 'pg';
import { LowBalanceRepository } from '@flagship/ledger';
import { DATA_SOURCE } from '@flagship/persistence';
import { CHANNELS, type LowBalance, PUBSUB, type PubSub } from '@flagship/redis';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { createTestEnvironment, http, TcpProxy, waitFor, type TestEnvironment } from '@flagship/testing';
import { AppModule } from '../app.module';
import { loadBillingWorkerConfig } from '../env.schema';
import { UsageReconcilerJob } from './usage-reconciler.job';

jest.setTimeout(60_000);

const TENANTS = ['7a1d0c52-1b7e-4c1e-9a51-2d9f4c1e0a01', '7a1d0c52-1b7e-4c1e-9a51-2d9f4c1e0a02', '7a1d0c52-1b7e-4c1e-9a51-2d9f4c1e0a03'];
const BALANCE = 1_000_000_000;

describe('usage reconciler (real Postgres, started apps)', () => {
  let te: TestEnvironment;
  let db: Client;
  const apps: RunningApp[] = [];

  const startWorker = async (env: NodeJS.ProcessEnv = {}): Promise<RunningApp> => {
    const config = loadBillingWorkerConfig({ ...te.env, RECONCILE_PENDING_AFTER_S: '600', RECONCILE_INTERVAL_S: '3600', ...env });
    const app = await startTestApp(AppModule.forConfig(config));
    apps.push(app);
    return app;
  };
  const stopAll = async () => {
    for (const app of apps.splice(0)) await app.close();
  };

  /** The gateway's write before calling a provider: hold `reserved` and record the pending row, atomically. */
  const reserve = async (tenantId: string, reserved: number, ageS: number): Promise<string> => {
    const id = randomUUID();
    await db.query(
      `WITH hold AS (UPDATE credit_balances SET reserved = reserved + $3 WHERE tenant_id = $2 RETURNING tenant_id)
       INSERT INTO usage_ledger (id, tenant_id, client_id, product_key, provider, model, endpoint, status, reserved, created_at)
       SELECT $1, tenant_id, 'ffc_gw', 'core', 'inhouse', 'small', 'chat.completions', 'pending', $3, now() - make_interval(secs => $4) FROM hold`,
      [id, tenantId, reserved, ageS],
    );
    return id;
  };
  /** The gateway's completion: settle the cost and release the reservation. */
  const complete = async (id: string, status: 'succeeded' | 'failed', debit: number) => {
    await db.query(
      `WITH done AS (
         UPDATE usage_ledger SET status = $2, debit = $3, completed_at = now() WHERE id = $1 AND status = 'pending' RETURNING tenant_id, reserved)
       UPDATE credit_balances b SET reserved = b.reserved - done.reserved, balance = b.balance - $3 FROM done WHERE b.tenant_id = done.tenant_id`,
      [id, status, debit],
    );
  };
  const balances = async () =>
    Object.fromEntries(
      (await db.query('SELECT tenant_id, balance::text AS balance, reserved::text AS reserved FROM credit_balances ORDER BY tenant_id')).rows.map(
        (r: { tenant_id: string; balance: string; reserved: string }) => [r.tenant_id, { balance: Number(r.balance), reserved: Number(r.reserved) }],
      ),
    );
  const rowsById = async (ids: string[]) =>
    (await db.query('SELECT id, status, reserved::text AS reserved, completed_at FROM usage_ledger WHERE id = ANY($1::uuid[])', [ids])).rows as Array<{
      id: string;
      status: string;
      reserved: string;
      completed_at: Date | null;
    }>;
  const metric = async (app: RunningApp, name: string): Promise<number> => {
    const text = (await http(`${app.metricsUrl}/metrics`)).text;
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  };

  beforeAll(async () => {
    te = await createTestEnvironment();
    db = new Client({ connectionString: te.db.url });
    await db.connect();
    for (const id of TENANTS) {
      await db.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [id]);
      await db.query('INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, $2)', [id, BALANCE]);
    }
  });
  afterEach(stopAll);
  afterAll(async () => {
    await db?.end();
    await te?.teardown();
  });

  it('with two replicas at once, abandons every stale pending row and releases each reservation exactly once', async () => {
    const stale: string[] = [];
    const expectedRelease: Record<string, number> = Object.fromEntries(TENANTS.map((t) => [t, 0]));
    for (let i = 0; i < 600; i++) {
      const tenant = TENANTS[i % 3];
      const amount = 100 + i;
      stale.push(await reserve(tenant, amount, 601 + (i % 50)));
      expectedRelease[tenant] += amount;
    }
    // Younger than the age: a request still in flight, untouched.
    const young = await reserve(TENANTS[0], 7_000, 30);
    // Completed by the gateway long ago: neither its status nor any reservation moves again.
    const succeeded = await reserve(TENANTS[1], 5_000, 3_600);
    await complete(succeeded, 'succeeded', 4_200);
    const failed = await reserve(TENANTS[2], 3_000, 3_600);
    await complete(failed, 'failed', 0);
    const before = await balances();
    expect(before[TENANTS[0]].reserved).toBe(expectedRelease[TENANTS[0]] + 7_000);

    // Both replicas start together: their first passes (at bootstrap) race over the same rows...
    const [a, b] = await Promise.all([startWorker({ RECONCILE_BATCH_SIZE: '25' }), startWorker({ RECONCILE_BATCH_SIZE: '25' })]);
    await waitFor(async () => (await metricByOutcome(a, 'ok')) >= 1 && (await metricByOutcome(b, 'ok')) >= 1, 10_000, 20);
    const jobA = a.app.get(UsageReconcilerJob);
    const jobB = b.app.get(UsageReconcilerJob);
    const never = new AbortController().signal;
    // ...and more overlapping passes, each running batches of 25 until none is left.
    await Promise.all([jobA.run(never), jobB.run(never), jobA.run(never), jobB.run(never)]);

    const after = await balances();
    for (const t of TENANTS) {
      expect([t, after[t].reserved]).toEqual([t, before[t].reserved - expectedRelease[t]]);
      expect([t, after[t].balance]).toEqual([t, before[t].balance]);
    }
    expect(after[TENANTS[0]].reserved).toBe(7_000);
    expect(after[TENANTS[1]].reserved).toBe(0);
    const settled = await rowsById(stale);
    expect(settled).toHaveLength(600);
    expect(settled.every((r) => r.status === 'abandoned' && r.completed_at instanceof Date)).toBe(true);
    const others = Object.fromEntries((await rowsById([young, succeeded, failed])).map((r) => [r.id, [r.status, r.completed_at === null]]));
    expect(others).toEqual({ [young]: ['pending', true], [succeeded]: ['succeeded', false], [failed]: ['failed', false] });
    // Both replicas' counters together: every row counted once, every micro-credit once.
    const total = (name: string) => Promise.all([metric(a, name), metric(b, name)]).then(([x, y]) => x + y);
    expect(await total('usage_reconciler_settled_rows_total')).toBe(600);
    expect(await total('usage_reconciler_released_credits_total')).toBe(Object.values(expectedRelease).reduce((s, n) => s + n, 0));

    // A later pass finds nothing to do and changes nothing.
    await jobA.run(never);
    expect(await balances()).toEqual(after);
    // The request in flight finishes, so the next tests (with a shorter age) start from a settled ledger.
    await complete(young, 'succeeded', 0);
  });

  it('a charge that crosses a low-balance threshold is recorded once and announced on the change feed after its commit', async () => {
    const tenant = '7a1d0c52-1b7e-4c1e-9a51-2d9f4c1e0a04';
    await db.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [tenant]);
    await db.query('INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, 10000)', [tenant]);
    const worker = await startWorker();
    // Its bootstrap pass done first, so the pass below is the one that finds these rows.
    await waitFor(async () => (await metricByOutcome(worker, 'ok')) >= 1, 10_000, 20);
    const alerts = new LowBalanceRepository(worker.app.get(DATA_SOURCE));
    await alerts.set(tenant, 9_000);
    // Two rows a crashed gateway left after calling the provider: 1,500 each, charged their estimate.
    const ids = [await reserve(tenant, 1_500, 700), await reserve(tenant, 1_500, 700)];
    await db.query('UPDATE usage_ledger SET upstream_called_at = now() WHERE id = ANY($1::uuid[])', [ids]);
    const heard: LowBalance[] = [];
    const stop = await worker.app.get<PubSub>(PUBSUB).subscribe(CHANNELS.lowBalance, (m) => {
      if (m.tenantId === tenant) heard.push(m);
    });
    try {
      await worker.app.get(UsageReconcilerJob).run(new AbortController().signal);
      expect((await balances())[tenant]).toEqual({ balance: 7_000, reserved: 0 });
      const recorded = await alerts.crossings(tenant, { limit: 10 });
      expect(recorded).toHaveLength(1);
      const c = recorded[0]!;
      expect(c).toMatchObject({ threshold: 9_000, balance: 7_000 });
      await waitFor(async () => (heard.length > 0 ? heard : undefined), 3000, 10);
      // Give a duplicate the time to arrive before asserting there is none.
      await new Promise((r) => setTimeout(r, 100));
      expect(heard).toEqual([{ tenantId: tenant, crossingId: c.id, threshold: 9_000, balance: 7_000, crossedAt: c.crossedAt }]);
    } finally {
      await stop();
      await stopAll();
    }
  });

  it('runs by itself from bootstrap on RECONCILE_INTERVAL_S, and stops with the app', async () => {
    const app = await startWorker({ RECONCILE_PENDING_AFTER_S: '1', RECONCILE_INTERVAL_S: '1' });
    const id = await reserve(TENANTS[0], 900, 0);
    const reservedBefore = (await balances())[TENANTS[0]].reserved;
    await waitFor(async () => (await rowsById([id]))[0].status === 'abandoned', 10_000, 100);
    expect((await balances())[TENANTS[0]].reserved).toBe(reservedBefore - 900);
    expect(await metric(app, 'billing_worker_job_runs_total')).toBeGreaterThanOrEqual(1);
    await stopAll();
    const later = await reserve(TENANTS[0], 800, 5);
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await rowsById([later]))[0].status).toBe('pending');
    // Settled the way the gateway would, so the next test starts from a settled ledger.
    await complete(later, 'failed', 0);
  });

  it('survives Postgres going away: logs the failure once, keeps answering, and settles once Postgres is back', async () => {
    const proxy = await TcpProxy.start(te.db.url);
    const url = new URL(proxy.rewrite(te.db.url));
    const errors = jest.spyOn(Logger.prototype, 'error');
    const recovered = jest.spyOn(Logger.prototype, 'log');
    try {
      const app = await startWorker({ DATABASE_URL: url.toString(), RECONCILE_PENDING_AFTER_S: '1', RECONCILE_INTERVAL_S: '1' });
      await proxy.cut();
      const id = await reserve(TENANTS[1], 1_234, 5);
      const reservedBefore = (await balances())[TENANTS[1]].reserved;
      // Several failing ticks: the app keeps running and counts them, but logs the outage once.
      await waitFor(async () => (await metricByOutcome(app, 'error')) >= 3, 20_000, 200);
      expect((await http(`${app.url}/healthz`)).status).toBe(200);
      expect((await http(`${app.url}/readyz`)).status).toBe(503);
      const reconcilerErrors = errors.mock.calls.filter((c) => String(c[0]).startsWith('job usage-reconciler failed'));
      expect(reconcilerErrors).toHaveLength(1);
      expect((await rowsById([id]))[0].status).toBe('pending');

      await proxy.restore();
      await waitFor(async () => (await rowsById([id]))[0].status === 'abandoned', 20_000, 200);
      expect((await balances())[TENANTS[1]].reserved).toBe(reservedBefore - 1_234);
      // Said once the pass returns, which is after its commit is visible here: waited for, not raced.
      await waitFor(async () => recovered.mock.calls.some((c) => c[0] === 'job usage-reconciler recovered'), 5_000, 20);
    } finally {
      errors.mockRestore();
      recovered.mockRestore();
      await stopAll();
      await proxy.stop();
    }
  });

  async function metricByOutcome(app: RunningApp, outcome: string): Promise<number> {
    const text = (await http(`${app.metricsUrl}/metrics`)).text;
    const line = text.split('\n').find((l) => l.startsWith('billing_worker_job_runs_total{') && l.includes(`outcome="${outcome}"`) && l.includes('job="usage-reconciler"'));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  }
});
