/**
 * The BUILT billing-worker as a process, as `npm start` runs it (needs `npx nx run
 * billing-worker:build` first; `npm test` builds): a gateway that died between reserving credit and
 * completing its request left a `pending` row; the worker settles it on its own, reports it in its
 * log and metrics, and stops cleanly on SIGTERM.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestEnvironment, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';

const MAIN_JS = join(__dirname, '../../../dist/apps/billing-worker/apps/billing-worker/src/main.js');
const TENANT = '8b2e1d63-2c8f-4d2f-8b62-3e0a5d2f1b01';

jest.setTimeout(60_000);

describe('billing-worker process', () => {
  let te: TestEnvironment;
  let db: Client;
  let child: ChildProcess | undefined;
  let output = '';

  const run = async (env: NodeJS.ProcessEnv): Promise<ChildProcess> => {
    if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run npx nx run billing-worker:build first`);
    output = '';
    const proc = spawn(process.execPath, [MAIN_JS], { env: { ...te.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.on('data', (c) => (output += c));
    proc.stderr!.on('data', (c) => (output += c));
    return proc;
  };

  beforeAll(async () => {
    te = await createTestEnvironment();
    db = new Client({ connectionString: te.db.url });
    await db.connect();
    await db.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [TENANT]);
    await db.query('INSERT INTO credit_balances (tenant_id, balance) VALUES ($1, 1000000)', [TENANT]);
  });
  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    await db?.end();
    await te?.teardown();
  });

  it('settles a row a crashed gateway left pending, says so in its log and metrics, and exits 0 on SIGTERM', async () => {
    // The gateway's reservation and pending row, two minutes old: its process died before completing it.
    const id = randomUUID();
    await db.query(
      `WITH hold AS (UPDATE credit_balances SET reserved = reserved + 2500 WHERE tenant_id = $2 RETURNING tenant_id)
       INSERT INTO usage_ledger (id, tenant_id, client_id, product_key, provider, model, endpoint, status, reserved, created_at)
       SELECT $1, tenant_id, 'ffc_gw', 'core', 'inhouse', 'small', 'chat.completions', 'pending', 2500, now() - interval '2 minutes' FROM hold`,
      [id, TENANT],
    );
    const port = await freePort();
    const metricsPort = await freePort();
    child = await run({ PORT: String(port), METRICS_PORT: String(metricsPort), RECONCILE_PENDING_AFTER_S: '60', RECONCILE_INTERVAL_S: '1' });
    await waitFor(async () => (await db.query('SELECT status FROM usage_ledger WHERE id = $1', [id])).rows[0].status === 'abandoned', 30_000, 100);
    const balance = (await db.query('SELECT balance::int, reserved::int FROM credit_balances WHERE tenant_id = $1', [TENANT])).rows[0];
    expect(balance).toEqual({ balance: 1_000_000, reserved: 0 });
    await waitFor(async () => (await http(`http://127.0.0.1:${port}/healthz`)).status === 200, 10_000);
    expect((await http(`http://127.0.0.1:${metricsPort}/metrics`)).text).toMatch(/^usage_reconciler_settled_rows_total\{service="billing-worker"\} 1$/m);
    expect(output).toContain('abandoned 1 usage rows pending for over 60 s (0 of them sent upstream, charged their estimate: 0 micro-credits), released 2500 reserved micro-credits of 1 tenants');
    const started = Date.now();
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('refuses to start with a bad reconciler setting, in one line naming it', async () => {
    const proc = await run({ PORT: String(await freePort()), RECONCILE_INTERVAL_S: '0' });
    const [code] = await once(proc, 'exit');
    expect(code).toBe(1);
    expect(output.trim()).toMatch(/^invalid configuration: RECONCILE_INTERVAL_S is invalid \(Invalid positive integer input: "0"\)$/);
  });
});
