/**
 * The console's tenant pages in a real headless Chromium against the built management-api and
 * ai-gateway started as processes (as `npm start` runs them, the fake model upstream standing in for
 * the model server): the first-run tour, projects, environments, team, an OAuth client created in the
 * console that then calls the gateway with the OpenAI SDK and shows up on the usage page, billing,
 * and an expired sandbox shown read-only. Each screen is screenshotted into
 * tmp/console-screenshots/ and checked with axe. Skips only when no Chromium is found.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { Client } from 'pg';
import type { BrowserContext, Page } from 'playwright-core';
import { createTestEnvironment, FakeModelUpstream, FakeStripe, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';
import { CHROMIUM, type ChromiumPage, HAVE_CHROMIUM, launchChromium, screenshot, seriousViolations, SESSION_KEY } from './chromium';
import { sharedStack } from './shared-stack.fixture';

const ROOT = join(__dirname, '../../..');
const mainOf = (app: string) => join(ROOT, `dist/apps/${app}/apps/${app}/src/main.js`);
const CONSOLE_DIR = join(ROOT, 'dist/apps/console');
const SHOTS = join(ROOT, 'tmp/console-screenshots');

if (!HAVE_CHROMIUM) {
  console.warn(`console pages e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

async function start(app: string, env: NodeJS.ProcessEnv, port: number): Promise<ChildProcess> {
  const main = mainOf(app);
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx nx run-many -t build -p management-api ai-gateway console\` first`);
  const child = spawn(process.execPath, [main], { cwd: ROOT, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c) => (err += c));
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`${app} exited ${child.exitCode}: ${err}`);
      return (await http(`http://127.0.0.1:${port}/readyz`).catch(() => ({ status: 0 }))).status === 200;
    },
    30000,
    100,
  );
  return child;
}

async function stop(child: ChildProcess | undefined) {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

(HAVE_CHROMIUM ? describe : describe.skip)('console tenant pages in Chromium', () => {
  let te: TestEnvironment;
  let fake: FakeModelUpstream;
  let stripe: FakeStripe;
  let api: ChildProcess;
  let gateway: ChildProcess;
  let base: string;
  let gatewayUrl: string;
  let chromium: ChromiumPage;
  let browser: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  const email = `pages-${Date.now()}@flagship.test`;
  const password = 'console-password-1';

  const shot = (name: string) => screenshot(page, join(SHOTS, `${name}.png`));

  async function accessible(screen: string) {
    expect(await seriousViolations(page, screen)).toEqual([]);
  }

  async function session(): Promise<{ token: string; tenantId: string }> {
    // Expressions as strings: this file is type-checked for Node, without the DOM's globals.
    return (await page.evaluate(`JSON.parse(sessionStorage.getItem('${SESSION_KEY}') ?? '{}')`)) as { token: string; tenantId: string };
  }

  async function nav(name: string, heading: string) {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  }

  beforeAll(async () => {
    for (const built of [mainOf('management-api'), mainOf('ai-gateway'), join(CONSOLE_DIR, 'index.html')]) {
      if (!existsSync(built)) throw new Error(`${built} is missing: run \`npx nx run-many -t build -p management-api ai-gateway console\` first`);
    }
    mkdirSync(SHOTS, { recursive: true });
    te = await createTestEnvironment();
    fake = await FakeModelUpstream.start();
    // Stripe is an outside service: its local fake, with the three plan prices, as `npm start` sets it up.
    stripe = await FakeStripe.start({ apiKey: 'sk_test_console' });
    const stripeClient = stripe.client();
    const price = async (name: string, cents: number) =>
      (await stripeClient.prices.create({ product: (await stripeClient.products.create({ name })).id, currency: 'usd', unit_amount: cents, recurring: { interval: 'month' } })).id;
    const stripeEnv = {
      STRIPE_API_BASE: stripe.url,
      STRIPE_SECRET_KEY: 'sk_test_console',
      STRIPE_WEBHOOK_SECRET: 'whsec_console',
      STRIPE_PRICE_FREE: await price('Free', 0),
      STRIPE_PRICE_STANDARD: await price('Standard', 1900),
      STRIPE_PRICE_PREMIUM: await price('Premium', 4900),
    };
    const [apiPort, gatewayPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${apiPort}`;
    gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    // The console's user is a platform admin: only those may allow an internal suite product key.
    api = await start(
      'management-api',
      { ...te.env, NODE_ENV: 'development', IDP_MODE: 'dev', PUBLIC_BASE_URL: base, CONSOLE_DIR, RATE_LIMIT_IP_PER_MINUTE: '1000', PLATFORM_ADMIN_EMAILS: email, ...stripeEnv },
      apiPort,
    );
    gateway = await start('ai-gateway', { ...te.env, NODE_ENV: 'development', OAUTH_ISSUER: base, PROVIDER_INHOUSE_URL: fake.url }, gatewayPort);
    // A context of the run's shared Chromium when there is one; the apps are this spec's own (Stripe, the gateway, a platform admin).
    chromium = await launchChromium({ width: 1280, height: 860 }, (await sharedStack())?.wsEndpoint);
    ({ browser, page } = chromium);
    await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    // The console's own errors (the fake Stripe's pages ask for a favicon it does not have).
    page.on('console', (m) => m.type() === 'error' && !m.location().url.startsWith(stripe.url) && pageErrors.push(`${m.text()} ${m.location().url}`));
    page.on('pageerror', (e) => pageErrors.push(String(e)));
  }, 90000);

  afterAll(async () => {
    await chromium?.close();
    await stop(gateway);
    await stop(api);
    await fake?.close();
    await stripe?.close();
    await te?.teardown();
  });

  it('tour, projects, environments, team, an OAuth client calling the gateway seen on the usage page, billing', async () => {
    await page.goto(`${base}/console/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
    const s = await session();
    const headers = { authorization: `Bearer ${s.token}`, 'x-tenant-id': s.tenantId };

    // The first-run tour: shown to a new user, recorded as completed, and not shown again.
    const tour = page.getByRole('complementary', { name: 'Flags' });
    await tour.waitFor();
    await shot('10-tour');
    await accessible('tour');
    for (let i = 0; i < 3; i++) await page.getByRole('button', { name: 'Next' }).click();
    await page.getByRole('button', { name: 'Finish tour' }).click();
    await page.getByRole('complementary').waitFor({ state: 'detached' });
    const tourState = await http(`${base}/v1/users/me/product-tours/console-intro`, { headers });
    expect(tourState.body).toMatchObject({ completed: true });
    await page.reload();
    await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
    await page.waitForLoadState('networkidle');
    expect(await page.getByRole('complementary').count()).toBe(0);

    // Projects: create with a colour, see the flag count, edit.
    await nav('Projects', 'Projects');
    await page.getByText('No projects yet.').waitFor();
    await page.getByRole('textbox', { name: 'Project name' }).fill('Checkout');
    await page.getByLabel('Colour').fill('#d9480f');
    await page.getByRole('button', { name: 'Create project' }).click();
    const row = page.getByRole('row', { name: /Checkout/ });
    await row.waitFor();
    expect(await row.textContent()).toContain('#d9480f');
    const projects = await http<{ id: string; name: string; color: string; flagCount: number }[]>(`${base}/api/projects`, { headers });
    expect(projects.body).toEqual([expect.objectContaining({ name: 'Checkout', color: '#d9480f', flagCount: 0 })]);
    const created = await http(`${base}/api/flags/projects/${projects.body[0]!.id}/flags`, {
      method: 'POST',
      headers,
      json: { key: 'one-click', name: 'One click', type: 'boolean', defaultValue: false },
    });
    expect(created.status).toBe(201);
    await page.getByRole('button', { name: 'Edit Checkout' }).click();
    await page.getByRole('form', { name: 'Edit project Checkout' }).getByRole('textbox', { name: 'Project name' }).fill('Checkout web');
    await page.getByRole('button', { name: 'Save project' }).click();
    await page.getByRole('row', { name: /Checkout web/ }).waitFor();
    expect(await page.getByRole('row', { name: /Checkout web/ }).getByTestId('flag-count').textContent()).toBe('1');
    await shot('11-projects');
    await accessible('projects');

    // Environments: the three defaults, and one added.
    await nav('Environments', 'Environments');
    await page.getByRole('cell', { name: 'staging', exact: true }).waitFor();
    await page.getByRole('textbox', { name: 'Environment key' }).fill('qa');
    await page.getByRole('textbox', { name: 'Environment name' }).fill('QA');
    await page.getByRole('button', { name: 'Add environment' }).click();
    await page.getByRole('cell', { name: 'qa', exact: true }).waitFor();
    await shot('12-environments');
    await accessible('environments');

    // Team: the user is the admin of their tenant; a second account is invited as an editor and accepts.
    const other = `teammate-${Date.now()}@flagship.test`;
    expect((await http(`${base}/dev/idp/accounts`, { method: 'POST', json: { email: other, password } })).status).toBe(201);
    const idToken = (await http<{ idToken: string }>(`${base}/dev/idp/token`, { method: 'POST', json: { email: other, password } })).body.idToken;
    expect((await http(`${base}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email: other, password } })).status).toBe(201);
    await nav('Team', 'Team');
    await page.getByRole('button', { name: `Role of ${email}` }).waitFor();
    await page.getByRole('textbox', { name: 'Member email' }).fill(other);
    await page.getByRole('button', { name: / Role$/ }).click();
    await page.getByRole('option', { name: 'editor' }).click();
    await page.getByRole('button', { name: 'Invite member' }).click();
    await page.getByText(`Invited ${other} as editor.`).waitFor();
    await page.getByRole('button', { name: `Withdraw the invitation of ${other}` }).waitFor();
    const members = async () => (await http<{ email: string; role: string }[]>(`${base}/api/tenants/${s.tenantId}/users`, { headers })).body.map((m) => `${m.role} ${m.email}`).sort();
    // Not a member before accepting, with their own session.
    expect(await members()).toEqual([`admin ${email}`]);
    const asOther = { authorization: `Bearer ${idToken}` };
    const theirInvitations = await http<{ id: string; role: string }[]>(`${base}/api/invitations`, { headers: asOther });
    expect(theirInvitations.body.map((i) => i.role)).toEqual(['editor']);
    expect((await http(`${base}/api/invitations/${theirInvitations.body[0].id}/accept`, { method: 'POST', headers: asOther })).status).toBe(200);
    await nav('Projects', 'Projects');
    await nav('Team', 'Team');
    const otherRole = page.getByRole('button', { name: `Role of ${other}` });
    await waitFor(async () => (await otherRole.textContent())?.includes('editor') === true, 10000, 100);
    expect(await members()).toEqual([`admin ${email}`, `editor ${other}`]);
    // Change the role in the row.
    await otherRole.click();
    await page.getByRole('option', { name: 'viewer' }).click();
    await waitFor(async () => (await members()).includes(`viewer ${other}`), 10000, 100);
    await waitFor(async () => (await otherRole.textContent())?.includes('viewer') === true, 10000, 100);
    // The only admin cannot step down: the API's 409 is shown with its request id.
    await page.getByRole('button', { name: `Role of ${email}` }).click();
    await page.getByRole('option', { name: 'editor' }).click();
    const refused = page.getByRole('row', { name: new RegExp(email) }).getByRole('alert');
    await refused.getByText('A tenant keeps at least one admin').waitFor();
    expect(await refused.textContent()).toContain('Request id');
    await shot('13-team');
    await accessible('team');
    // Someone without an account is invited: listed as pending, and the invitation can be withdrawn.
    const newcomer = `newcomer-${Date.now()}@flagship.test`;
    await page.getByRole('textbox', { name: 'Member email' }).fill(newcomer);
    await page.getByRole('button', { name: 'Invite member' }).click();
    const withdrawNewcomer = page.getByRole('button', { name: `Withdraw the invitation of ${newcomer}` });
    await withdrawNewcomer.click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Withdraw invitation' }).click();
    await withdrawNewcomer.waitFor({ state: 'detached' });
    expect((await http<unknown[]>(`${base}/api/tenants/${s.tenantId}/invitations`, { headers })).body).toEqual([]);
    // The signed-in admin's own last access in this tenant is recorded (the "Last active" column).
    const mine = await http<{ email: string; status: string; lastAccessedAt: string | null }[]>(`${base}/api/tenants/${s.tenantId}/users`, { headers });
    expect(mine.body.find((m) => m.email === email)).toMatchObject({ status: 'active', lastAccessedAt: expect.any(String) });
    // Remove the teammate, after confirming.
    await page.getByRole('button', { name: `Remove ${other}` }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Remove member' }).click();
    await otherRole.waitFor({ state: 'detached' });
    expect(await members()).toEqual([`admin ${email}`]);

    // The console's user is invited to the teammate's tenant: shown on every page with Accept and
    // Decline; accepting adds it to the tenant menu and the active tenant stays the user's own.
    const otherTenant = (await http<{ id: string; name: string }[]>(`${base}/api/tenants`, { headers: asOther })).body[0];
    expect((await http(`${base}/api/tenants/${otherTenant.id}/users`, { method: 'POST', headers: asOther, json: { email, role: 'viewer' } })).status).toBe(201);
    await page.reload();
    const invitations = page.getByRole('region', { name: 'Invitations' });
    await invitations.getByText(otherTenant.name).waitFor();
    await page.getByRole('button', { name: `Role of ${email}` }).waitFor();
    await shot('13b-invitations');
    await accessible('invitations');
    await invitations.getByRole('button', { name: `Accept the invitation to ${otherTenant.name}` }).click();
    await invitations.getByRole('status').getByText(`You joined ${otherTenant.name}`).waitFor();
    expect((await session()).tenantId).toBe(s.tenantId);
    const mineNow = (await http<{ id: string }[]>(`${base}/api/tenants`, { headers: { authorization: `Bearer ${s.token}` } })).body.map((t) => t.id);
    expect(mineNow).toEqual(expect.arrayContaining([s.tenantId, otherTenant.id]));

    // OAuth clients: create one allowed the gateway and the internal `insights` product; its secret is shown once.
    await nav('OAuth clients', 'OAuth clients');
    await page.getByText('No OAuth clients yet.').waitFor();
    await page.getByRole('textbox', { name: 'Client name' }).fill('Insights backend');
    await page.getByRole('checkbox', { name: /insights/ }).check({ force: true });
    // The gateway needs the ai:invoke scope (flags:read and flags:evaluate alone are refused there).
    await page.getByRole('checkbox', { name: /ai:invoke/ }).check({ force: true });
    await page.getByRole('button', { name: 'Create client' }).click();
    const secretBox = page.getByRole('region', { name: 'Secret of Insights backend' });
    await secretBox.waitFor();
    await secretBox.getByText('It is shown only once').waitFor();
    const clientId = (await secretBox.getByTestId('client-id').textContent()) ?? '';
    const clientSecret = (await secretBox.getByTestId('client-secret').textContent()) ?? '';
    expect(clientSecret.length).toBeGreaterThan(20);
    await secretBox.getByRole('button', { name: 'Copy secret' }).click();
    await secretBox.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(clientSecret);
    await shot('14-oauth-client-secret');
    await accessible('OAuth client secret');
    await secretBox.getByRole('button', { name: 'I have stored the secret' }).click();
    expect(await page.getByText(clientSecret).count()).toBe(0);
    await page.getByRole('button', { name: 'Rotate secret of Insights backend' }).waitFor();
    await shot('15-oauth-clients');
    await accessible('OAuth clients');

    // The client, as a product backend uses it: a token by client credentials, then the gateway through the OpenAI SDK.
    const token = await http<{ access_token: string }>(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }).toString(),
    });
    expect(token.status).toBe(200);
    const openai = new OpenAI({ baseURL: `${gatewayUrl}/v1`, apiKey: token.body.access_token, defaultHeaders: { 'x-service-product-key': 'insights' }, maxRetries: 0 });
    const { data: completion, response } = await openai.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'one two three' }] }).withResponse();
    expect(completion.choices[0]?.message.content).toBeTruthy();
    const requestId = response.headers.get('x-request-id') ?? '';
    expect(requestId).not.toBe('');

    // The call on the usage page: the ledger row, the chart, the totals.
    await nav('AI usage', 'AI usage');
    const ledgerRow = page.getByTestId('ledger').getByRole('row', { name: new RegExp(requestId) });
    await ledgerRow.waitFor();
    await waitFor(
      async () => {
        if ((await ledgerRow.textContent())?.includes('succeeded')) return true;
        await page.reload();
        await ledgerRow.waitFor();
        return false;
      },
      10000,
      500,
    );
    const text = (await ledgerRow.textContent()) ?? '';
    expect(text).toContain('insights');
    expect(text).toContain('fake-chat-1');
    expect(text).toContain(clientId);
    expect(text).toContain('zero-rated');
    await page.getByRole('figure', { name: 'Requests per day by product and model' }).locator('.recharts-bar-rectangle').first().waitFor();
    expect(await page.getByTestId('usage-requests').textContent()).toBe('1');
    // The filters reach the API: another product has no rows.
    await page.getByRole('button', { name: /Product$/ }).click();
    await page.getByRole('option', { name: 'core' }).click();
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No AI gateway requests match these filters.').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await ledgerRow.waitFor();
    // The server's export (GET /api/usage/export) of the last 30 days: the file the browser saves.
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    // Saved here: a download of a shared (remote) Chromium has no local path of its own.
    const saved = await download;
    expect(saved.suggestedFilename()).toMatch(/^usage-\d{8}T000000Z-\d{8}T000000Z\.csv$/);
    const csvPath = join(tmpdir(), `console-usage-${Date.now()}.csv`);
    await saved.saveAs(csvPath);
    const csv = readFileSync(csvPath, 'utf8');
    rmSync(csvPath);
    const [header, exported] = csv.split('\r\n').map((l) => l.split(','));
    const cell = (name: string) => exported?.[header?.indexOf(name) ?? -1];
    expect([cell('request_id'), cell('client_id'), cell('product_key'), cell('model'), cell('zero_rated')]).toEqual([requestId, clientId, 'insights', 'fake-chat-1', 'true']);
    await page.getByRole('status').filter({ hasText: `Downloaded ${saved.suggestedFilename()}` }).waitFor();
    await shot('16-usage');
    await accessible('usage');

    // Billing: plan and subscription status, credits, and the plan and credit actions.
    await nav('Billing', 'Plan and billing');
    expect(await page.getByTestId('plan').textContent()).toBe('free');
    await shot('17-billing');
    await accessible('billing');
    // A monthly budget for the OAuth client that called the gateway above: set here, then listed
    // with what that client spent this month (the request above, zero-rated: 0).
    await page.getByRole('textbox', { name: 'Monthly cap (credits)' }).fill('5');
    await page.getByRole('button', { name: 'Save budget' }).click();
    const budgetRow = page.getByRole('table', { name: 'Budgets' }).getByRole('row').filter({ hasText: 'Insights backend' });
    await budgetRow.waitFor();
    expect(await budgetRow.textContent()).toContain('5');
    await budgetRow.scrollIntoViewIfNeeded();
    await shot('17b-budgets');
    await accessible('billing with a budget');
    // Upgrade and credit purchase follow the URL the API answers with, to (the fake) Stripe Checkout and back.
    await page.getByRole('button', { name: 'Switch to Premium' }).click();
    await page.waitForURL(`${stripe.url}/checkout/**`);
    await page.getByRole('heading', { name: 'Fake Stripe Checkout' }).waitFor();
    expect(await page.textContent('body')).toContain('subscription');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.getByRole('heading', { name: 'Plan and billing', level: 1 }).waitFor();
    await page.getByRole('textbox', { name: 'Amount (USD)' }).fill('25');
    await page.getByRole('button', { name: 'Buy credits' }).click();
    await page.waitForURL(`${stripe.url}/checkout/**`);
    expect(await page.textContent('body')).toContain('payment: 25 usd');
    await page.goBack();
    await page.getByRole('heading', { name: 'Plan and billing', level: 1 }).waitFor();

    // The one 409 above is the browser's log of the refused step-down, not an error of the console.
    const errors = pageErrors.splice(0);
    expect(errors.filter((e) => !/409 \(Conflict\)/.test(e))).toEqual([]);
  }, 180000);

  it('an expired sandbox is shown read-only: a clear message and its controls disabled', async () => {
    const s = await session();
    const headers = { authorization: `Bearer ${s.token}` };
    const sandbox = await http<{ id: string }>(`${base}/api/tenants`, { method: 'POST', headers, json: { name: 'Old sandbox', primaryEmail: email, isSandbox: true } });
    expect(sandbox.status).toBe(201);
    // Time passes: the sandbox's end moved into the past, as 14 days would.
    const db = new Client({ connectionString: te.db.url });
    await db.connect();
    await db.query(`UPDATE tenants SET sandbox_expires_at = now() - interval '1 day' WHERE id = $1`, [sandbox.body.id]);
    await db.end();
    const write = await http(`${base}/api/projects`, { method: 'POST', headers: { ...headers, 'x-tenant-id': sandbox.body.id }, json: { name: 'Late' } });
    expect(write.status).toBe(403);

    // The new tenant comes with the next sign-in's bootstrap.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Signing in keeps the page the user was on.
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await nav('Flags', 'Flags in production');
    await page.getByRole('button', { name: /Tenant$/ }).click();
    await page.getByRole('option', { name: /Old sandbox/ }).click();

    const banner = page.getByRole('region', { name: 'Sandbox' });
    await banner.getByText('This sandbox expired on').waitFor();
    expect(await banner.textContent()).toContain('read-only');
    // The flags list: demo flags shown, their switches disabled.
    const sw = page.getByRole('switch', { name: 'Enabled in production' }).first();
    await sw.waitFor();
    expect(await sw.isDisabled()).toBe(true);
    // Reading stays possible: the search still filters; creating is not offered.
    expect(await page.getByRole('link', { name: 'Create flag', exact: true }).count()).toBe(1); // the nav's only
    await page.getByRole('searchbox', { name: 'Search flags' }).fill('beta');
    await page.getByRole('row', { name: /Maintenance banner/ }).waitFor({ state: 'detached' });
    await page.getByRole('row', { name: /Beta program/ }).waitFor();
    await page.getByRole('searchbox', { name: 'Search flags' }).fill('');
    await shot('18-sandbox-expired-flags');
    await accessible('expired sandbox flags');

    await nav('Projects', 'Projects');
    await page.getByRole('row', { name: /Demo shop/ }).waitFor();
    expect(await page.getByRole('button', { name: 'Create project' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Edit Demo shop' }).isDisabled()).toBe(true);

    await nav('Sandbox', 'Sandbox');
    expect(await page.getByTestId('sandbox-state').textContent()).toBe('expired (read-only)');
    await page.getByRole('heading', { name: 'Demo flags' }).waitFor();
    await shot('19-sandbox');
    await accessible('sandbox');
    expect(pageErrors).toEqual([]);
  }, 120000);
});
