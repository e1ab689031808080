/**
 * The backlog gauges the alerts read (usage rows pending too long, meter reporting lag, webhook
 * inbox lag), through the real app on this file's own Postgres database and its real /metrics: rows
 * written with SQL as the gateway and the webhook route write them, the Stripe jobs off so nothing
 * drains them meanwhile.
 */
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { createTestEnvironment, http, waitFor, type TestEnvironment } from '@flagship/testing';
import { AppModule } from '../app.module';
import { loadBillingWorkerConfig } from '../env.schema';
import { JobScheduler } from './job-scheduler';

jest.setTimeout(60_000);

const TENANT = '7a1d0c52-1b7e-4c1e-9a51-2d9f4c1e0b01';

describe('backlog gauges (real Postgres, started app)', () => {
  let te: TestEnvironment;
  let db: Client;
  let app: RunningApp;

  /** The un-labelled sample of `name` on the app's /metrics (undefined when it is not exported). */
  const metric = async (name: string): Promise<number | undefined> => {
    const text = (await http(`${app.metricsUrl}/metrics`)).text;
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const gauges = async () => ({
    pending: [await metric('usage_ledger_pending_rows'), await metric('usage_ledger_oldest_pending_age_seconds')],
    meter: [await metric('billing_meter_unreported_rows'), await metric('billing_meter_oldest_unreported_age_seconds')],
    inbox: [await metric('billing_webhook_inbox_unprocessed_rows'), await metric('billing_webhook_inbox_oldest_unprocessed_age_seconds')],
  });
  /** A refresh now (the interval is an hour in this file), then the gauges once it has run. */
  const refreshed = async (until: (g: Awaited<ReturnType<typeof gauges>>) => boolean) => {
    app.app.get(JobScheduler).wake('backlog-metrics');
    return waitFor(async () => {
      const g = await gauges();
      return until(g) && g;
    }, 10_000, 50);
  };

  const row = async (status: string, opts: { createdAgoS: number; completedAgoS?: number; debit?: number; zeroRated?: boolean; reported?: boolean }) => {
    const id = randomUUID();
    await db.query(
      `INSERT INTO usage_ledger (id, tenant_id, client_id, product_key, provider, model, endpoint, status, debit, zero_rated, created_at, completed_at, meter_reported_at)
       VALUES ($1, $2, 'ffc_gw', 'core', 'inhouse', 'small', 'chat.completions', $3, $4, $5, now() - make_interval(secs => $6),
               CASE WHEN $7::float8 IS NULL THEN NULL ELSE now() - make_interval(secs => $7::float8) END, CASE WHEN $8 THEN now() END)`,
      [id, TENANT, status, opts.debit ?? 0, opts.zeroRated ?? false, opts.createdAgoS, opts.completedAgoS ?? null, opts.reported ?? false],
    );
    return id;
  };
  const event = async (receivedAgoS: number, processed: boolean) => {
    const id = `evt_${randomUUID().replace(/-/g, '')}`;
    await db.query(
      `INSERT INTO stripe_events (id, type, stripe_created, payload, received_at, processed_at)
       VALUES ($1, 'invoice.paid', 1, '{}'::jsonb, now() - make_interval(secs => $2), CASE WHEN $3 THEN now() END)`,
      [id, receivedAgoS, processed],
    );
    return id;
  };

  beforeAll(async () => {
    te = await createTestEnvironment();
    db = new Client({ connectionString: te.db.url });
    await db.connect();
    await db.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [TENANT]);
    const config = loadBillingWorkerConfig({ ...te.env, BILLING_JOBS_ENABLED: 'false', BACKLOG_METRICS_INTERVAL_S: '3600', RECONCILE_INTERVAL_S: '3600' });
    app = await startTestApp(AppModule.forConfig(config));
  });
  afterAll(async () => {
    await app?.close();
    await db?.end();
    await te?.teardown();
  });

  it('reports zeros on an empty database', async () => {
    expect(await refreshed((g) => g.pending[0] === 0)).toEqual({ pending: [0, 0], meter: [0, 0], inbox: [0, 0] });
  });

  it('counts each queue and ages its oldest row, leaving out rows that are done or not billable', async () => {
    // Pending: a request in flight for 30 s, one a crashed gateway left 120 s ago.
    await row('pending', { createdAgoS: 30 });
    const stuck = await row('pending', { createdAgoS: 120 });
    // The meter's outbox: billable rows completed 300 s and 20 s ago; one reported, one zero-rated, one free, one failed: none of them waits.
    const late = await row('succeeded', { createdAgoS: 301, completedAgoS: 300, debit: 500 });
    await row('abandoned', { createdAgoS: 620, completedAgoS: 20, debit: 40 });
    await row('succeeded', { createdAgoS: 5000, completedAgoS: 5000, debit: 500, reported: true });
    await row('succeeded', { createdAgoS: 4000, completedAgoS: 4000, debit: 500, zeroRated: true });
    await row('succeeded', { createdAgoS: 4000, completedAgoS: 4000, debit: 0 });
    await row('failed', { createdAgoS: 4000, completedAgoS: 4000 });
    // The inbox: events received 200 s and 10 s ago not processed yet; an older one processed.
    const waiting = await event(200, false);
    await event(10, false);
    await event(9000, true);

    const g = await refreshed((x) => x.pending[0] === 2);
    expect([g.pending[0], g.meter[0], g.inbox[0]]).toEqual([2, 2, 2]);
    // Ages by Postgres' clock, read a moment after the rows were written.
    expect(g.pending[1]).toBeGreaterThanOrEqual(120);
    expect(g.pending[1]).toBeLessThan(130);
    expect(g.meter[1]).toBeGreaterThanOrEqual(300);
    expect(g.meter[1]).toBeLessThan(310);
    expect(g.inbox[1]).toBeGreaterThanOrEqual(200);
    expect(g.inbox[1]).toBeLessThan(210);

    // The oldest of each is drained: the gauges follow at the next refresh.
    await db.query(`UPDATE usage_ledger SET status = 'abandoned', completed_at = now() WHERE id = $1`, [stuck]);
    await db.query(`UPDATE usage_ledger SET meter_reported_at = now() WHERE id = $1`, [late]);
    await db.query(`UPDATE stripe_events SET processed_at = now() WHERE id = $1`, [waiting]);
    const after = await refreshed((x) => x.pending[0] === 1);
    expect([after.pending[0], after.meter[0], after.inbox[0]]).toEqual([1, 1, 1]);
    expect(after.pending[1]).toBeLessThan(40);
    expect(after.meter[1]).toBeLessThan(30);
    expect(after.inbox[1]).toBeLessThan(20);
  });
});
