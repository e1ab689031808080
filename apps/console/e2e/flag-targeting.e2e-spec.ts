/**
 * The flag editor in a real headless Chromium against the built management-api and orep-server
 * started as processes (as `npm start` runs them): sign up, create a project (API) and a flag in it
 * (console), add a rule with a 50/50 rollout, switch it on, check the playground against the
 * evaluate endpoint and against orep-server, see the change in the audit log, survive a concurrent
 * edit (412 -> diff -> reapply), and filter the flags list by tag. Screenshots of each screen land in
 * tmp/console-screenshots/targeting-*.png. Skips only when no Chromium is found.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { freePort, http, waitFor } from '@flagship/testing';
import { CHROMIUM, HAVE_CHROMIUM, screenshot, seriousViolations, SESSION_KEY } from './chromium';
import { bulkFlags, chooseOption, type ConsoleStack, SHOTS, startConsoleStack } from './console-stack.fixture';

const ROOT = join(__dirname, '../../..');
const main = (app: string) => join(ROOT, 'dist/apps', app, 'apps', app, 'src/main.js');
const OREP_TOKEN = 'console-e2e-orep-token';
/** orep-server's browser key (OREP_CLIENT_KEYS): it sees only the flags marked available to browsers. */
const OREP_BROWSER_KEY = 'pk_console_e2e_browser_01';

if (!HAVE_CHROMIUM) {
  console.warn(`flag targeting e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

(HAVE_CHROMIUM ? describe : describe.skip)('flag targeting in the console (Chromium)', () => {
  let stack: ConsoleStack;
  const procs: ChildProcess[] = [];
  let base: string;
  let orep: string;
  let page: Page;
  let pageErrors: string[];

  /** An app beside the stack's management-api, on its database and Redis prefix. */
  const start = async (app: string, env: NodeJS.ProcessEnv, port: number) => {
    const child = spawn(process.execPath, [main(app)], { cwd: ROOT, env: { ...stack.env, NODE_ENV: 'development', ...env }, stdio: 'ignore' });
    procs.push(child);
    await waitFor(async () => (await http(`http://127.0.0.1:${port}/healthz`)).status === 200, 20000, 100);
  };

  const shot = (name: string, fullPage = true) => screenshot(page, join(SHOTS, `targeting-${name}.png`), fullPage);
  const accessible = async (screen: string) => expect(await seriousViolations(page, screen)).toEqual([]);

  const choose = (scope: Page | Locator, label: RegExp, option: string) => chooseOption(page, scope, label, option);

  beforeAll(async () => {
    if (!existsSync(main('orep-server'))) throw new Error(`${main('orep-server')} is missing: run \`npx nx run-many -t build -p management-api orep-server console\` first`);
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsoleStack({ width: 1280, height: 900 }, { RATE_LIMIT_FREE: '100000' });
    ({ base, page, pageErrors } = stack);
  }, 60000);

  afterAll(async () => {
    for (const p of procs) {
      if (p.exitCode === null) {
        p.kill('SIGTERM');
        await once(p, 'exit');
      }
    }
    await stack?.stop();
  });

  it('targets a flag with a rule and a 50/50 rollout, as the API and orep-server evaluate it', async () => {
    const email = `targeting-${Date.now()}@flagship.test`;
    await page.goto(`${base}/console/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('console-password-1');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
    // Expressions as strings: this file is type-checked for Node, without the DOM's globals.
    const session = (await page.evaluate(`JSON.parse(sessionStorage.getItem('${SESSION_KEY}') ?? '{}')`)) as { token: string; tenantId: string };
    const api = { authorization: `Bearer ${session.token}`, 'x-tenant-id': session.tenantId, 'x-environment': 'production' };

    // orep-server for this tenant, started as npm start starts it.
    const orepPort = await freePort();
    orep = `http://127.0.0.1:${orepPort}`;
    await start('orep-server', { OREP_PORT: String(orepPort), OREP_AUTH_TOKEN: OREP_TOKEN, OREP_CLIENT_KEYS: OREP_BROWSER_KEY, OREP_TENANT_ID: session.tenantId, OREP_ENVIRONMENT: 'production' }, orepPort);

    // A project (its page is another screen), then the flag created in it from the console.
    const project = await http(`${base}/api/projects`, { method: 'POST', headers: api, json: { name: 'Storefront', description: 'The shop', color: '#336699' } });
    expect(project.status).toBe(201);
    await page.getByRole('link', { name: 'Create flag' }).first().click();
    await page.getByLabel('Key').fill('new-checkout');
    await page.getByLabel('Name').fill('New checkout');
    await page.getByLabel('Tags (comma-separated)').fill('checkout, web');
    await choose(page, /Project/, 'Storefront');
    await page.getByRole('radio', { name: 'false' }).check();
    await shot('01-create-flag');
    await accessible('create flag');
    await page.getByRole('button', { name: 'Create flag' }).click();
    await page.getByRole('heading', { name: 'New checkout', level: 1 }).waitFor();
    const created = await http(`${base}/api/flags/new-checkout`, { headers: api });
    expect(created.body).toMatchObject({ projectId: project.body.id, tags: ['checkout', 'web'], rules: [] });
    await shot('02-flag-detail-empty');
    await accessible('flag detail (no targeting)');

    // A rule: country in NO, served as a 50/50 rollout. A value that can never match warns first.
    await page.getByRole('button', { name: 'Add rule' }).click();
    const rule = page.getByRole('group', { name: 'Rule 1', exact: true });
    const clause = page.getByRole('group', { name: 'Rule 1 clause 1' });
    await rule.getByRole('textbox', { name: 'Description' }).fill('Norway split');
    await clause.getByRole('textbox', { name: 'Attribute' }).fill('country');
    await choose(clause, /Operator/, 'less than (<)');
    await clause.getByRole('textbox', { name: 'Values' }).fill('NO');
    await clause.getByText("must be a number for 'lessThan': this value never matches").waitFor();
    await shot('03-rule-warning');
    await accessible('rule with a warning');
    await choose(clause, /Operator/, 'is one of (in)');
    await clause.getByRole('textbox', { name: 'Values' }).fill('NO');
    expect(await clause.getByText(/never matches/).count()).toBe(0);
    // The label is what a pointer presses (react-aria hides the input itself).
    await rule.getByText('A percentage rollout', { exact: true }).click();
    expect(await rule.getByRole('radio', { name: 'A percentage rollout' }).isChecked()).toBe(true);
    const rollout = page.getByRole('group', { name: 'Rule 1 rollout' });
    expect(await rollout.getByRole('textbox', { name: 'true (%)' }).inputValue()).toBe('50');
    expect(await rollout.getByRole('textbox', { name: 'false (%)' }).inputValue()).toBe('50');
    await rollout.getByText('Total: 100%').waitFor();
    await shot('04-rule-rollout');
    await accessible('rule with a rollout');
    await page.getByRole('button', { name: 'Save changes' }).click();
    // A regex anchored at the start: "Unsaved: Rules." contains the words too.
    await page.getByText(/^Saved: Rules\./).waitFor();
    const saved = await http(`${base}/api/flags/new-checkout`, { headers: api });
    const [trueId, falseId] = ['true', 'false'].map((n) => saved.body.variations.find((v: { name: string }) => v.name === n).id as string);
    expect(saved.body.rules).toEqual([
      {
        id: expect.any(String),
        description: 'Norway split',
        clauses: [{ attribute: 'country', op: 'in', values: ['NO'], negate: false }],
        rollout: { variations: [{ variationId: trueId, weight: 50000 }, { variationId: falseId, weight: 50000 }] },
      },
    ]);
    expect(saved.body.warnings).toEqual([]);

    // By keyboard: Enter on "Add rule" adds a second rule, Space on its Remove button takes it away
    // again; the focused button shows its focus ring (react-aria's data-focus-visible).
    const addRule = page.getByRole('button', { name: 'Add rule' });
    await addRule.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('group', { name: 'Rule 2', exact: true }).waitFor();
    expect(await addRule.getAttribute('data-focus-visible')).toBe('true');
    await page.getByRole('button', { name: 'Remove rule 2', exact: true }).focus();
    await page.keyboard.press('Space');
    await page.getByText('No unsaved changes.').waitFor();
    expect(await page.getByRole('group', { name: 'Rule 2', exact: true }).count()).toBe(0);

    // The off value: the "true" variation (saved alone, so later saves must keep it).
    await choose(page, /Served when off/, 'true (true)');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/^Saved: Off value\./).waitFor();
    expect((await http(`${base}/api/flags/new-checkout`, { headers: api })).body.offValue).toBe(true);

    // Switch it on.
    const sw = page.getByRole('switch', { name: 'Enabled in production' });
    await sw.click({ force: true });
    await waitFor(async () => (await http(`${base}/api/flags/new-checkout`, { headers: api })).body.enabled === true, 5000);

    // The playground's answers are the API's, for contexts on both sides of the split, and orep-server's.
    const orepEval = async (key: string) =>
      (await http(`${orep}/v1/flags/new-checkout/evaluate`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OREP_TOKEN}` },
        json: { defaultValue: false, type: 'boolean', context: { targetingKey: key, country: 'NO' } },
      })).body as { value: boolean; reason: string; enabled: boolean };
    const seen = new Set<boolean>();
    for (const user of ['user-1', 'user-2', 'user-3', 'user-4', 'user-5', 'user-6']) {
      await page.getByLabel('Context key').fill(user);
      await page.getByLabel('Attributes (JSON)').fill('{"country": "NO"}');
      await page.getByRole('button', { name: 'Evaluate' }).click();
      await page.getByTestId('eval-reason').getByText('RULE_MATCH').waitFor();
      const direct = await http(`${base}/api/flags/new-checkout/evaluate`, { method: 'POST', headers: api, json: { userId: user, attributes: { country: 'NO' } } });
      expect(direct.body).toMatchObject({ reason: 'RULE_MATCH', ruleIndex: 0 });
      await page.getByTestId('eval-value').getByText(JSON.stringify(direct.body.value), { exact: true }).waitFor();
      expect(await page.getByTestId('eval-rule').textContent()).toBe('Rule 1: Norway split (country in "NO")');
      // orep-server learns of the change through Redis; it answers the same value once it has.
      await waitFor(async () => (await orepEval(user)).value === direct.body.value, 5000, 50);
      expect(await orepEval(user)).toMatchObject({ value: direct.body.value, enabled: true });
      seen.add(direct.body.value as boolean);
    }
    // Six contexts, a 50/50 split: both variations served (what the bucketing of these keys gives).
    expect([...seen].sort()).toEqual([false, true]);
    await shot('05-playground');

    // The audit log shows the rule as a diff, and the switch.
    const audit = page.getByRole('region', { name: 'Audit log' });
    await audit.getByText('rules[0].rollout.variations[1].weight').waitFor();
    await audit.getByRole('table', { name: 'On/off' }).waitFor();
    const auditApi = await http(`${base}/api/flags/new-checkout/audit`, { headers: api });
    expect(auditApi.body.map((e: { action: string }) => e.action)).toEqual(['create', 'update', 'update', 'update']);
    await audit.scrollIntoViewIfNeeded();
    await shot('06-audit-log');
    await accessible('flag detail with rule, playground and audit log');

    // Client-side availability: server-only until ticked; saved for every environment; from then on
    // orep-server's browser key evaluates the flag, which it was told did not exist before.
    const byBrowserKey = async () =>
      (await http(`${orep}/ofrep/v1/evaluate/flags/new-checkout`, { method: 'POST', headers: { authorization: `Bearer ${OREP_BROWSER_KEY}` }, json: { context: { targetingKey: 'user-1' } } })).status;
    expect(await byBrowserKey()).toBe(404);
    const clientSide = page.getByRole('group', { name: 'Available to client-side keys' });
    await clientSide.getByText('Server-only: only the server token evaluates it').waitFor();
    await clientSide.getByText('Browser keys (client-side ID)', { exact: true }).click();
    expect(await clientSide.getByRole('checkbox', { name: 'Browser keys (client-side ID)' }).isChecked()).toBe(true);
    await clientSide.getByText('every visitor of your app').waitFor();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/^Saved: Client-side availability\./).waitFor();
    await page.getByRole('region', { name: 'Settings' }).scrollIntoViewIfNeeded();
    await shot('06b-client-side-availability', false);
    await accessible('client-side availability');
    const availability = await http(`${base}/api/flags/new-checkout`, { headers: { ...api, 'x-environment': 'staging' } });
    expect(availability.body.clientSideAvailability).toEqual({ usingEnvironmentId: true, usingMobileKey: false });
    await waitFor(async () => (await byBrowserKey()) === 200, 5000, 50);

    // Someone else edits meanwhile: saving is a 412, the console shows their change and reapplies ours.
    const current = await http(`${base}/api/flags/new-checkout`, { headers: api });
    const theirs = await http(`${base}/api/flags/new-checkout`, {
      method: 'PATCH',
      headers: { ...api, 'if-match': current.headers.get('etag') ?? '' },
      json: { description: 'Edited elsewhere', targets: [{ variationId: trueId, values: ['vip-1'] }] },
    });
    expect(theirs.status).toBe(200);
    await page.getByRole('region', { name: 'Settings' }).getByRole('textbox', { name: 'Name' }).fill('New checkout flow');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'The flag changed on the server' });
    await conflict.getByRole('table', { name: 'Description' }).getByText('"Edited elsewhere"').waitFor();
    await conflict.getByRole('table', { name: 'Individual targets' }).getByText('"vip-1"').waitFor();
    await shot('07-conflict-412');
    await accessible('412 conflict');
    await conflict.getByRole('button', { name: 'Reapply my edits on the new version' }).click();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/^Saved: Name\./).waitFor();
    const merged = await http(`${base}/api/flags/new-checkout`, { headers: api });
    expect(merged.body).toMatchObject({ name: 'New checkout flow', description: 'Edited elsewhere', targets: [{ variationId: trueId, values: ['vip-1'] }], offValue: true, enabled: true });
    expect(merged.body.rules).toHaveLength(1);

    // The tag filter narrows the list to the tagged flag and back. 1,000 rows are console.e2e-spec's;
    // their speed is tools/bench/console-flags.ts's (a timed e2e measured CI's load, not the console).
    const flags = bulkFlags(29);
    expect((await http(`${base}/api/flags/import`, { method: 'POST', headers: api, json: { flags } })).status).toBe(200);
    await page.getByRole('link', { name: 'Flags', exact: true }).click();
    const switches = page.getByRole('switch', { name: 'Enabled in production' });
    await page.reload();
    await switches.nth(29).waitFor();
    await choose(page, /Tag/, 'web');
    await waitFor(async () => (await switches.count()) === 1, 10000, 50);
    await page.getByRole('link', { name: 'New checkout flow' }).waitFor();
    await shot('08-flags-tag-filter');
    await accessible('flags list filtered by tag');
    await choose(page, /Tag/, 'All tags');
    await switches.nth(29).waitFor();
    expect(await switches.count()).toBe(30);
    await shot('09-flags-all', false);

    // The one 412 is the browser's log of the refused save above, which the console handled.
    expect(pageErrors.filter((e) => !/412 \(Precondition Failed\)/.test(e))).toEqual([]);
  }, 240000);
});
