/**
 * Webhooks and stale flags in a real headless Chromium against the built management-api started as a
 * process (WEBHOOKS_ALLOW_PRIVATE_URLS, so a receiver on 127.0.0.1 is allowed): an admin adds a
 * webhook to a local receiver, sees its whsec_ secret once, sees the flag.created delivery a new flag
 * queues (pending: billing-worker, which sends, is not started here), deletes it after a confirm; then
 * filters the flags list by Stale. Screenshots land in tmp/console-screenshots/webhooks-*.png, each
 * screen checked with axe (no violations of any impact). Skips only when no Chromium is found.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import type { Page } from 'playwright-core';
import { http } from '@flagship/testing';
import { ALL_IMPACTS, axeViolations, CHROMIUM, HAVE_CHROMIUM, screenshot } from './chromium';
import { chooseOption, type ConsoleStack, signUpInConsole, startConsoleStack } from './console-stack.fixture';

const ROOT = join(__dirname, '../../..');
const SHOTS = join(ROOT, 'tmp/console-screenshots');

if (!HAVE_CHROMIUM) {
  console.warn(`webhooks e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

(HAVE_CHROMIUM ? describe : describe.skip)('webhooks and stale flags in the console (Chromium)', () => {
  let stack: ConsoleStack;
  let page: Page;
  let receiver: Server;
  let received = 0;

  const shot = (name: string) => screenshot(page, join(SHOTS, `webhooks-${name}.png`));
  const accessible = async (screen: string) => {
    expect(await axeViolations(page, screen, ALL_IMPACTS)).toEqual([]);
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    receiver = createServer((req, res) => {
      received += 1;
      req.resume();
      res.end();
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    stack = await startConsoleStack({ width: 1280, height: 900 }, { WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' });
    page = stack.page;
  }, 60000);

  afterAll(async () => {
    await stack?.stop();
    receiver?.close();
  });

  it('adds a webhook to a local receiver and shows its secret once, logs the delivery a new flag queues, deletes it, and filters flags by Stale', async () => {
    const { base } = stack;
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/flagship`;
    const { tenantId, headers } = await signUpInConsole(page, base, 'webhooks');

    // Added from the form; the secret is shown once, then gone for good.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByText('No webhooks yet.').waitFor();
    await page.getByRole('textbox', { name: 'Endpoint URL' }).fill(hookUrl);
    await page.getByRole('textbox', { name: 'Description' }).fill('Local receiver');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secretPanel = page.getByRole('region', { name: `Signing secret of ${hookUrl}` });
    const secret = await secretPanel.getByTestId('secret').textContent();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await secretPanel.getByRole('note').textContent()).toContain('you will not see it again');
    await page.getByRole('cell', { name: /Local receiver/ }).waitFor();
    await shot('01-created-secret-once');
    await accessible('webhook created, secret shown once');
    await secretPanel.getByRole('button', { name: 'I have stored the secret' }).click();
    await secretPanel.waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret ?? 'whsec_');
    const listed = await http(`${base}/api/webhooks`, { headers });
    expect(listed.body).toEqual([expect.objectContaining({ url: hookUrl, events: ['flag.created', 'flag.deleted', 'flag.updated'], enabled: true, droppedEvents: 0 })]);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');

    // Two flags: each queues a flag.created delivery. billing-worker is not running, so it stays pending.
    for (const [key, name] of [['checkout', 'Checkout'], ['old-banner', 'Old banner']]) {
      expect((await http(`${base}/api/flags`, { method: 'POST', headers, json: { key, name, type: 'boolean', defaultValue: false } })).status).toBe(201);
    }
    await page.getByRole('button', { name: `Deliveries of ${hookUrl}` }).click();
    const log = page.getByRole('region', { name: `Deliveries to ${hookUrl}` });
    await log.getByRole('row').nth(2).waitFor();
    expect(await log.getByRole('row').count()).toBe(3);
    expect(await log.getByText('pending', { exact: true }).count()).toBe(2);
    expect(await log.getByText('No attempt yet: billing-worker sends it.').count()).toBe(2);
    await shot('02-delivery-log-pending');
    await accessible('webhook delivery log');

    // Disabled as billing-worker does after a day of failures: every screen tells the admin.
    const pg = new Client({ connectionString: stack.databaseUrl });
    await pg.connect();
    await pg.query(`UPDATE webhooks SET enabled = false, disabled_at = now(), disabled_reason = 'every delivery failed for a day' WHERE tenant_id = $1`, [tenantId]);
    await pg.end();
    await page.reload();
    const banner = page.getByRole('region', { name: 'Disabled webhooks' });
    await banner.waitFor();
    // The banner belongs to the layout and can show before the page itself (and its h1) has rendered.
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    expect(await banner.textContent()).toContain(`The webhook to ${hookUrl} was disabled after every delivery failed for a day`);
    await shot('02b-disabled-banner');
    await accessible('a disabled webhook told on every screen');

    // Deleted after a confirm; the banner goes with it.
    await page.getByRole('button', { name: `Delete webhook ${hookUrl}` }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Delete webhook' }).click();
    await page.getByText('No webhooks yet.').waitFor();
    await banner.waitFor({ state: 'detached' });
    expect((await http(`${base}/api/webhooks`, { headers })).body).toEqual([]);
    expect(received).toBe(0);

    // Stale flags: old-banner made 60 days ago and never evaluated; checkout evaluated two hours ago
    // (the evaluators note it once a minute: written here as they would).
    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    await db.query(`UPDATE flags SET created_at = now() - interval '60 days' WHERE tenant_id = $1 AND key = 'old-banner'`, [tenantId]);
    await db.query(`INSERT INTO flag_evaluations (tenant_id, environment_key, flag_key, last_evaluated_at) VALUES ($1, 'production', 'checkout', now() - interval '2 hours')`, [tenantId]);
    await db.end();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Flags' }).click();
    const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    expect(await row('Checkout').getByRole('cell').nth(4).textContent()).toMatch(/^2 hours ago/);
    expect(await row('Old banner').getByRole('cell').nth(4).textContent()).toMatch(/^never/);
    await chooseOption(page, page, /Lifecycle/, 'Stale');
    await page.getByText(/^Stale: not evaluated in production for 30 days/).waitFor();
    await row('Checkout').waitFor({ state: 'detached' });
    // The stale list is the server's answer: wait for it, not for the moment the rows were cleared.
    await row('Old banner').waitFor();
    expect(await page.getByRole('table', { name: 'Flags in production' }).getByRole('link').allTextContents()).toEqual(['Old banner']);
    await shot('03-flags-stale');
    await accessible('flags filtered by Stale');
    await chooseOption(page, page, /Lifecycle/, 'Active');
    await row('Checkout').waitFor();
    expect(await page.getByRole('table', { name: 'Flags in production' }).getByRole('link').allTextContents()).toEqual(['Checkout']);

    expect(stack.pageErrors).toEqual([]);
  }, 180000);
});
