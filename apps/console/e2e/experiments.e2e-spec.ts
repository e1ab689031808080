/**
 * The experiment view of a flag page in a real headless Chromium, against the built management-api
 * started as a process with its rollout runner on (SCHEDULED_CHANGES_POLL_MS=200): a JSON flag bound
 * to the `core` route with a rollout plan, ledger rows of two days for both variations, the runner
 * starting the plan, then rolling it back when the treatment's error rate regresses. The page shows
 * the variations side by side with intervals, the charts over time, the stages and the decision log.
 * Screenshots land in tmp/console-screenshots/experiments-*.png, each screen checked with axe (no
 * violations of any impact). Skips only when no Chromium is found.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type { Page } from 'playwright-core';
import { http, waitFor } from '@flagship/testing';
import { ALL_IMPACTS, axeViolations, CHROMIUM, HAVE_CHROMIUM, screenshot } from './chromium';
import { type ConsoleStack, SHOTS, signUpInConsole, startConsoleStack } from './console-stack.fixture';

if (!HAVE_CHROMIUM) {
  console.warn(`experiments e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

(HAVE_CHROMIUM ? describe : describe.skip)('experiment view of a flag page (Chromium)', () => {
  let stack: ConsoleStack;
  let page: Page;
  let db: Client;

  const shot = (name: string) => screenshot(page, join(SHOTS, `experiments-${name}.png`));
  const accessible = async (screen: string) => {
    expect(await axeViolations(page, screen, ALL_IMPACTS)).toEqual([]);
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsoleStack({ width: 1280, height: 900 }, { SCHEDULED_CHANGES_POLL_MS: '200', ROLLOUT_CHECK_MS: '600000' });
    page = stack.page;
    db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
  }, 60000);
  afterAll(async () => {
    await db?.end();
    await stack?.stop();
  });

  /** `n` requests of `variation` spread over the `hours` before now, `failing` of them failed; latencies over [lo, hi). */
  const traffic = (tenantId: string, variation: string, n: number, failing: number, lo: number, hi: number, hours: number, debit: number) =>
    db.query(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, stream, status, debit, input_tokens, output_tokens, error_code, latency_ms, first_token_ms,
                                 request_id, created_at, completed_at, flag_key, flag_version, variation, context_kind)
       SELECT $1, 'ffc_demo', 'core', 'inhouse', 'm', 'chat.completions', i % 2 = 0, CASE WHEN i % $4::int < $5::int THEN 'failed' ELSE 'succeeded' END,
              CASE WHEN i % $4::int < $5::int THEN 0 ELSE $9::int + (i * 37) % 400 END, 40, 60, CASE WHEN i % $4::int < $5::int THEN 'upstream_error' END,
              $6::int + ((i * 7919) % ($7::int - $6::int)), CASE WHEN i % 2 = 0 THEN ($6::int + ((i * 7919) % ($7::int - $6::int))) / 4 END,
              'r-' || gen_random_uuid(), now() - ($8::int * interval '1 hour') * ((i * 104729) % 1000) / 1000.0, now(), 'chat-model', 1, $2, 'multi'
         FROM generate_series(1, $3::int) AS i`,
      [tenantId, variation, n, n >= 1 ? Math.max(1, Math.round(n / Math.max(1, failing))) : 1, failing > 0 ? 1 : 0, lo, hi, hours, debit],
    );

  it('shows variations side by side with intervals, charts over time, and a rollout rolled back with its reason', async () => {
    const { base } = stack;
    const { tenantId, headers } = await signUpInConsole(page, base, 'experiments');
    const created = await http(`${base}/api/flags`, {
      method: 'POST',
      headers,
      json: { key: 'chat-model', name: 'Chat model', type: 'json', defaultValue: { model: 'small' }, flag_variations: [{ name: 'small', value: { model: 'small' } }, { name: 'large', value: { model: 'large' } }] },
    });
    expect(created.status).toBe(201);
    const { rows } = await db.query<{ variations: Array<{ id: string; name: string }> }>(`SELECT variations FROM flags WHERE tenant_id = $1 AND key = 'chat-model'`, [tenantId]);
    const small = rows[0]!.variations.find((v) => v.name === 'small')!.id;
    const large = rows[0]!.variations.find((v) => v.name === 'large')!.id;
    // Two days of traffic: the large model costs more and answers slower, and fails a little more.
    await traffic(tenantId, small, 900, 9, 300, 900, 48, 900);
    await traffic(tenantId, large, 300, 6, 450, 1400, 48, 2400);
    const plan = { stages: [{ percent: 5, minRequests: 100, minMinutes: 30 }, { percent: 25, minMinutes: 60 }, { percent: 100, minMinutes: 120 }], guards: { errorRate: 0.02, p95LatencyMs: 800, costPerRequest: 3000 } };
    await db.query(`INSERT INTO gateway_bindings (tenant_id, product_key, flag_key, rollout_plan) VALUES ($1, 'core', 'chat-model', $2)`, [tenantId, JSON.stringify(plan)]);
    const rollout = async () => (await http(`${base}/api/gateway/bindings/core/rollout`, { headers })).body as { state: { status: string } | null; decisions: Array<{ decision: string; reason: string }> };
    await waitFor(async () => (await rollout()).state?.status === 'running', 20000, 100);

    await page.goto(`${base}/console/flags/chat-model`);
    const view = page.getByRole('region', { name: 'Experiment' });
    await view.getByRole('table', { name: /Variations side by side/ }).waitFor();
    const header = await view.getByRole('table', { name: /Variations side by side/ }).locator('thead th').allTextContents();
    expect(header).toEqual(['Figure', 'small (control)', 'large']);
    expect(await view.getByRole('row', { name: /^Requests/ }).textContent()).toContain('900');
    await view.getByRole('figure', { name: 'Requests over time by variation' }).locator('svg').first().waitFor();
    await view.getByRole('list', { name: 'Stages' }).waitFor();
    expect(await view.getByRole('heading', { name: /Rollout on core/ }).textContent()).toBe('Rollout on core: running');
    await shot('01-report-and-running-rollout');
    await accessible('experiment report, rollout running');

    // The treatment's upstream starts failing: a third of its requests in the stage; the runner rolls back.
    await traffic(tenantId, small, 400, 2, 300, 900, 0, 900);
    await traffic(tenantId, large, 60, 20, 450, 1400, 0, 2400);
    await db.query(`UPDATE rollout_states SET next_check_at = now() WHERE tenant_id = $1`, [tenantId]);
    await waitFor(async () => (await rollout()).state?.status === 'rolled_back', 20000, 100);
    const decisions = (await rollout()).decisions;
    expect(decisions.map((d) => d.decision)).toEqual(['rolled_back', 'started']);

    await page.reload();
    await view.getByRole('heading', { name: 'Rollout on core: rolled back' }).waitFor();
    const log = view.getByRole('table', { name: 'Decision log, newest first' });
    expect(await log.getByRole('row').nth(1).textContent()).toMatch(/rolled back0%error rate over the control by/);
    await shot('02-rolled-back');
    // The view alone, at full resolution, to look at.
    await view.screenshot({ path: join(SHOTS, 'experiments-03-view.png') });
    await accessible('experiment report, rollout rolled back');
    expect(stack.pageErrors).toEqual([]);
  }, 120000);
});
