/**
 * The console in a real headless Chromium against the built management-api started as a process
 * (as `npm start` runs it), serving the built console at /console with its real CSP: sign up, create
 * a flag, see its rules, switch it on, and check the playground against the evaluate endpoint.
 * Screenshots of each screen land in tmp/console-screenshots/. Skips only when no Chromium is found.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { http, waitFor } from '@flagship/testing';
import { CHROMIUM, HAVE_CHROMIUM, screenshot, seriousViolations, SESSION_KEY } from './chromium';
import { bulkFlags, type ConsoleStack, startConsoleStack } from './console-stack.fixture';

const ROOT = join(__dirname, '../../..');
const SHOTS = join(ROOT, 'tmp/console-screenshots');

if (!HAVE_CHROMIUM) {
  console.warn(`console e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

(HAVE_CHROMIUM ? describe : describe.skip)('web console in Chromium', () => {
  let stack: ConsoleStack;
  let base: string;
  let page: Page;
  let pageErrors: string[];

  const shot = (name: string, fullPage = true) => screenshot(page, join(SHOTS, `${name}.png`), fullPage);
  /** axe-core on the screen as it is: no serious or critical violation. */
  const accessible = async (screen: string) => expect(await seriousViolations(page, screen)).toEqual([]);

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsoleStack({ width: 1280, height: 860 });
    ({ base, page, pageErrors } = stack);
  }, 60000);

  afterAll(async () => stack?.stop());

  it('signs up, creates a flag, shows its rules, switches it on, and evaluates it as the API does', async () => {
    const email = `console-${Date.now()}@flagship.test`;
    const password = 'console-password-1';

    // Sign-in screen, served with its CSP.
    const res = await page.goto(`${base}/console/`);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByRole('heading', { name: 'Flagship console' }).waitFor();
    await shot('01-sign-in');
    await accessible('sign-in');

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();

    // Empty flag list of the new tenant.
    await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
    await page.getByText('No flags yet in this tenant.').waitFor();
    await shot('02-flags-empty');
    await accessible('flags (empty)');
    // Expressions as strings: this file is type-checked for Node, without the DOM's globals.
    const token = (await page.evaluate(`JSON.parse(sessionStorage.getItem('${SESSION_KEY}') ?? '{}')`)) as { token: string; tenantId: string };
    expect(token.token).toMatch(/^ey/);
    expect(page.url()).not.toContain(token.token);
    const api = { authorization: `Bearer ${token.token}`, 'x-tenant-id': token.tenantId, 'x-environment': 'production' };

    // Create a flag.
    await page.getByRole('link', { name: 'Create flag' }).first().click();
    await page.getByRole('heading', { name: 'Create a flag' }).waitFor();
    await page.getByLabel('Key').fill('new-checkout');
    await page.getByLabel('Name').fill('New checkout');
    await page.getByRole('textbox', { name: 'Description' }).fill('The redesigned checkout flow');
    await page.getByLabel('Tags (comma-separated)').fill('checkout, web');
    await page.getByRole('radio', { name: 'false' }).check();
    await shot('03-create-flag');
    await accessible('create flag');
    await page.getByRole('button', { name: 'Create flag' }).click();
    await page.getByRole('heading', { name: 'New checkout' }).waitFor();

    // A rule added through the API, shown on the detail page.
    const read = await http(`${base}/api/flags/new-checkout`, { headers: api });
    const trueId = read.body.variations.find((v: { value: unknown }) => v.value === true).id as string;
    const patched = await http(`${base}/api/flags/new-checkout`, {
      method: 'PATCH',
      headers: { ...api, 'if-match': read.headers.get('etag') ?? '' },
      json: { rules: [{ id: 'norway', description: 'Norway first', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: trueId }] },
    });
    expect(patched.status).toBe(200);
    await page.reload();
    await page.getByRole('heading', { name: 'Rules' }).waitFor();
    // The rule as the flag editor shows it: its description and clause in the rule's fields.
    expect(await page.getByRole('group', { name: 'Rule 1', exact: true }).getByRole('textbox', { name: 'Description' }).inputValue()).toBe('Norway first');
    expect(await page.getByRole('group', { name: 'Rule 1 clause 1' }).getByRole('textbox', { name: 'Attribute' }).inputValue()).toBe('country');

    // The list: search, then switch the flag on in production.
    await page.getByRole('link', { name: 'Flags', exact: true }).click();
    await page.getByRole('searchbox', { name: 'Search flags' }).fill('checkout');
    const sw = page.getByRole('switch', { name: 'Enabled in production' });
    expect(await sw.isChecked()).toBe(false);
    await sw.click({ force: true });
    await waitFor(async () => (await sw.isChecked()) === true, 5000);
    await waitFor(async () => (await http(`${base}/api/flags/new-checkout`, { headers: api })).body.enabled === true, 5000);
    await shot('04-flags-list');
    await accessible('flags list');

    // The playground's answer is the API's.
    await page.getByRole('link', { name: 'New checkout' }).click();
    await page.getByRole('heading', { name: 'Evaluation playground' }).waitFor();
    await page.getByLabel('Context key').fill('user-42');
    await page.getByLabel('Attributes (JSON)').fill('{"country": "NO"}');
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByTestId('eval-reason').waitFor();
    const shown = { value: await page.getByTestId('eval-value').textContent(), reason: await page.getByTestId('eval-reason').textContent(), rule: await page.getByTestId('eval-rule').textContent() };
    const direct = await http(`${base}/api/flags/new-checkout/evaluate`, { method: 'POST', headers: api, json: { userId: 'user-42', attributes: { country: 'NO' } } });
    expect(direct.status).toBe(200);
    expect(direct.body).toMatchObject({ value: true, reason: 'RULE_MATCH', ruleIndex: 0 });
    expect(shown).toEqual({ value: JSON.stringify(direct.body.value), reason: direct.body.reason, rule: 'Rule 1: Norway first (country in "NO")' });
    await shot('05-flag-detail-playground');
    await accessible('flag detail');

    // Another environment: the flag is off there, and its switch says so by name.
    await page.getByRole('link', { name: 'Flags', exact: true }).click();
    await page.getByRole('button', { name: /Environment/ }).click();
    await page.getByRole('option', { name: 'Staging' }).click();
    await page.getByRole('heading', { name: 'Flags in staging' }).waitFor();
    expect(await page.getByRole('switch', { name: 'Enabled in staging' }).isChecked()).toBe(false);

    // An ended session (the token no longer accepted) sends the user back to sign-in, saying why.
    await page.evaluate(
      `sessionStorage.setItem('${SESSION_KEY}', JSON.stringify({ ...JSON.parse(sessionStorage.getItem('${SESSION_KEY}')), token: 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln' }))`,
    );
    await page.reload();
    await page.getByText('Your session has ended. Sign in again to continue.').waitFor();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.getByLabel('Email').inputValue()).toBe(email);
    await shot('06-session-ended');

    // Signing in again with the password brings the user back to their flags.
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
    expect(await page.getByRole('switch', { name: 'Enabled in production' }).isChecked()).toBe(true);

    // 1,000 flags (imported in one request, the most the list asks for) all render. How fast, and the
    // longest main-thread task, is tools/bench/console-flags.ts's: a timed e2e measured CI's load.
    const flags = bulkFlags(999);
    const imported = await http(`${base}/api/flags/import`, { method: 'POST', headers: api, json: { flags } });
    expect(imported.status).toBe(200);
    const switches = page.getByRole('switch', { name: 'Enabled in production' });
    await page.reload();
    await switches.nth(999).waitFor({ timeout: 60000 });
    expect(await switches.count()).toBe(1000);
    await page.getByRole('link', { name: 'bulk-0998', exact: true }).waitFor();
    await shot('07-flags-1000', false);

    // The one 401 above is the browser's log of the refused request, not an error of the console.
    expect(pageErrors.filter((e) => !/401 \(Unauthorized\)/.test(e))).toEqual([]);
  }, 120000);
});
