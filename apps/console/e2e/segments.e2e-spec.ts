/**
 * Segments in a real headless Chromium against the built management-api started as a process: sign
 * up, create a segment from the console, give it user keys and organization keys (included and
 * excluded) and a weighted rule, see the counts in the list, survive a concurrent edit (412 -> diff
 * -> reapply) and delete it. Then the flag editor's new controls (a clause's context kind, the
 * segmentMatch operator choosing that segment, a target of another kind), looked at with axe, and the
 * playground evaluating a multi-kind context through the API, a refusal of the server shown at the
 * field. Screenshots land in tmp/console-screenshots/segments-*.png. Skips only when no Chromium is found.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { http } from '@flagship/testing';
import { CHROMIUM, HAVE_CHROMIUM, screenshot, seriousViolations, SESSION_KEY } from './chromium';
import { chooseOption, type ConsoleStack, startConsoleStack } from './console-stack.fixture';

const ROOT = join(__dirname, '../../..');
const SHOTS = join(ROOT, 'tmp/console-screenshots');

if (!HAVE_CHROMIUM) {
  console.warn(`segments e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

(HAVE_CHROMIUM ? describe : describe.skip)('segments in the console (Chromium)', () => {
  let stack: ConsoleStack;
  let base: string;
  let page: Page;
  let pageErrors: string[];

  const shot = (name: string, fullPage = true) => screenshot(page, join(SHOTS, `segments-${name}.png`), fullPage);
  const accessible = async (screen: string) => expect(await seriousViolations(page, screen)).toEqual([]);

  const choose = (scope: Page | Locator, label: RegExp, option: string) => chooseOption(page, scope, label, option);

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsoleStack({ width: 1280, height: 900 });
    ({ base, page, pageErrors } = stack);
  }, 60000);

  afterAll(async () => stack?.stop());

  it('creates, edits (keys per kind, a weighted rule), rebases over a 412 and deletes a segment', async () => {
    await page.goto(`${base}/console/`);
    await page.getByLabel('Email').fill(`segments-${Date.now()}@flagship.test`);
    await page.getByLabel('Password').fill('console-password-1');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
    // Expressions as strings: this file is type-checked for Node, without the DOM's globals.
    const session = (await page.evaluate(`JSON.parse(sessionStorage.getItem('${SESSION_KEY}') ?? '{}')`)) as { token: string; tenantId: string };
    const headers = { authorization: `Bearer ${session.token}`, 'x-tenant-id': session.tenantId, 'x-environment': 'production' };
    // The welcome tour would cover the screenshots.
    await page.getByRole('button', { name: 'Skip tour' }).click();

    // The page, empty, then a segment created from its form.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Segments' }).click();
    await page.getByText('No segments yet in production.').waitFor();
    await page.getByLabel('Key').fill('beta-customers');
    await page.getByLabel('Name').fill('Beta customers');
    await page.getByLabel('Description').fill('Early access');
    await shot('01-empty-create');
    await accessible('segments, empty, create form');
    await page.getByRole('button', { name: 'Create segment' }).click();
    await page.getByRole('heading', { name: 'Beta customers', level: 1 }).waitFor();

    // Keys: users in and out, organizations in and out; a rule (country NO) for 25.5% of its matches.
    await page.getByRole('textbox', { name: 'Included user keys' }).fill('ada, grace');
    await page.getByRole('textbox', { name: 'Excluded user keys' }).fill('mallory');
    await page.getByRole('button', { name: 'Add keys of another kind' }).click();
    const org = page.getByRole('group', { name: 'Keys of kind organization' });
    await org.getByRole('textbox', { name: 'Included organization keys' }).fill('acme\nglobex');
    await org.getByRole('textbox', { name: 'Excluded organization keys' }).fill('initech');
    await page.getByRole('button', { name: 'Add rule' }).click();
    const clause = page.getByRole('group', { name: 'Rule 1 clause 1' });
    await clause.getByRole('textbox', { name: 'Attribute' }).fill('country');
    await clause.getByRole('textbox', { name: 'Values' }).fill('NO');
    const rule = page.getByRole('group', { name: 'Segment rule 1' });
    await rule.getByText('Only a percentage of the contexts it matches', { exact: true }).click();
    const pct = rule.getByRole('textbox', { name: 'Rule 1 includes (%)' });
    await pct.fill('25.5');
    await pct.blur();
    await shot('02-edit');
    await accessible('segment editor with keys per kind and a weighted rule');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/^Saved: /).waitFor();
    const saved = await http(`${base}/api/segments/beta-customers`, { headers });
    expect(saved.body).toMatchObject({
      name: 'Beta customers',
      description: 'Early access',
      included: ['ada', 'grace'],
      excluded: ['mallory'],
      includedContexts: [{ contextKind: 'organization', values: ['acme', 'globex'] }],
      excludedContexts: [{ contextKind: 'organization', values: ['initech'] }],
      rules: [{ id: expect.any(String), clauses: [{ attribute: 'country', op: 'in', values: ['NO'], negate: false }], weight: 25_500 }],
    });

    // Someone else edits meanwhile: saving is a 412, the console shows their change and reapplies ours.
    const theirs = await http(`${base}/api/segments/beta-customers`, { method: 'PATCH', headers: { ...headers, 'if-match': saved.headers.get('etag') ?? '' }, json: { description: 'Edited elsewhere' } });
    expect(theirs.status).toBe(200);
    await page.getByRole('textbox', { name: 'Name' }).fill('Beta accounts');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'The segment changed on the server' });
    await conflict.getByRole('table', { name: 'Description' }).getByText('"Edited elsewhere"').waitFor();
    await shot('03-conflict-412');
    await accessible('segment 412 conflict');
    await conflict.getByRole('button', { name: 'Reapply my edits on the new version' }).click();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText(/^Saved: Name\./).waitFor();
    expect((await http(`${base}/api/segments/beta-customers`, { headers })).body).toMatchObject({ name: 'Beta accounts', description: 'Edited elsewhere', version: 4 });

    // The list counts keys over every kind.
    await page.getByRole('link', { name: '← All segments' }).click();
    const row = page.getByRole('row').filter({ hasText: 'beta-customers' });
    await row.getByRole('link', { name: 'Beta accounts' }).waitFor();
    expect(await row.getByRole('cell').allTextContents()).toEqual(['Beta accountsbeta-customers', '4', '2', '1']);
    await shot('04-list');
    await accessible('segments list');

    // The flag editor's new controls: a clause on another kind, segmentMatch choosing this segment, a
    // target of another kind; then the playground's multi-kind context. Looked at, not saved (see above).
    const flag = await http(`${base}/api/flags`, { method: 'POST', headers, json: { key: 'new-checkout', name: 'New checkout', type: 'boolean', defaultValue: false } });
    expect(flag.status).toBe(201);
    await page.goto(`${base}/console/flags/new-checkout`);
    await page.getByRole('heading', { name: 'New checkout', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Add target of another kind' }).click();
    await page.getByRole('group', { name: 'Kind target 1' }).getByRole('textbox', { name: 'Keys' }).fill('acme');
    await page.getByRole('button', { name: 'Add rule' }).click();
    const byKind = page.getByRole('group', { name: 'Rule 1 clause 1' });
    await choose(byKind, /Context kind/, 'organization');
    await byKind.getByRole('textbox', { name: 'Attribute' }).fill('plan');
    await byKind.getByRole('textbox', { name: 'Values' }).fill('enterprise');
    await page.getByRole('button', { name: 'Add clause to rule 1' }).click();
    const bySegment = page.getByRole('group', { name: 'Rule 1 clause 2' });
    await choose(bySegment, /Operator/, 'is in segment');
    await bySegment.getByText('Beta accounts (beta-customers)', { exact: true }).click();
    expect(await bySegment.getByRole('checkbox', { name: 'Beta accounts (beta-customers)' }).isChecked()).toBe(true);
    await page.getByRole('group', { name: 'Rule 1', exact: true }).scrollIntoViewIfNeeded();
    await shot('05-flag-kinds-segment-match');
    await accessible('flag editor with a kind, segmentMatch and a kind target');
    await page.getByRole('button', { name: 'Discard changes' }).click();
    await page.getByText('No unsaved changes.').waitFor();

    // A context typed as JSON, evaluated by the API: a user target matches, and the kind is said; a
    // multi-kind context is evaluated as one (sent as the body's context), its organization matching a
    // clause on kind organization that a user context with the same attributes would not.
    const flagNow = await http(`${base}/api/flags/new-checkout`, { headers });
    const trueId = flagNow.body.variations.find((v: { name: string }) => v.name === 'true').id as string;
    const targeted = await http(`${base}/api/flags/new-checkout`, {
      method: 'PATCH',
      headers: { ...headers, 'if-match': flagNow.headers.get('etag') ?? '' },
      json: { enabled: true, targets: [{ variationId: trueId, values: ['ada'] }], rules: [{ id: 'enterprise', description: 'Enterprise', clauses: [{ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['enterprise'] }], variationId: trueId }] },
    });
    expect(targeted.status).toBe(200);
    await page.reload();
    const playground = page.getByRole('region', { name: 'Evaluation playground' });
    const contextBox = playground.getByRole('textbox', { name: 'Context (JSON)' });
    const evaluate = async (context: string) => {
      await contextBox.fill(context);
      await playground.getByRole('button', { name: 'Evaluate' }).click();
    };
    await playground.getByText('A context as JSON (any kind, multi-kind)', { exact: true }).click();
    await playground.getByText('Kinds: user, organization').waitFor();
    await evaluate('{"kind": "user", "key": "ada", "country": "NO"}');
    await playground.getByTestId('eval-reason').getByText('TARGET_MATCH').waitFor();
    expect(await playground.getByTestId('eval-kind').textContent()).toBe('user (key ada)');
    await evaluate('{"kind": "user", "key": "grace", "plan": "enterprise"}');
    await playground.getByTestId('eval-reason').getByText('FALLTHROUGH').waitFor();
    await evaluate('{"kind": "multi", "user": {"key": "grace"}, "organization": {"key": "acme", "plan": "enterprise"}}');
    await playground.getByTestId('eval-reason').getByText('RULE_MATCH').waitFor();
    expect(await playground.getByTestId('eval-rule').textContent()).toBe('Rule 1: Enterprise (organization plan in "enterprise")');
    expect(await playground.getByTestId('eval-kind').textContent()).toBe('organization (key acme)');
    await playground.scrollIntoViewIfNeeded();
    await shot('06-playground-json-context', false);
    await accessible('playground with a multi-kind JSON context and the matched kind');
    // What only the server refuses (more kinds than a context may hold) is shown at the field, by its name.
    const tooMany = Object.fromEntries([['kind', 'multi'], ...Array.from({ length: 101 }, (_, i) => [`k${i}`, { key: 'x' }])]);
    await evaluate(JSON.stringify(tooMany));
    await playground.getByText('context: a multi-kind context holds at most 100 kinds').waitFor();
    expect(await contextBox.getAttribute('aria-invalid')).toBe('true');
    await playground.scrollIntoViewIfNeeded();
    await shot('07-playground-server-refused-context', false);
    await accessible('playground with a context the server refused');
    await contextBox.fill('{"kind": "multi", "multi": {"key": "x"}}');
    await playground.getByText('multi: "multi" is not a context kind.').waitFor();
    await playground.scrollIntoViewIfNeeded();
    await shot('08-playground-refused-context', false);
    await accessible('playground with a refused multi-kind context');

    // Deleted from its page (a segment no flag uses): gone from the list and the API.
    await page.goto(`${base}/console/segments/beta-customers`);
    await page.getByRole('button', { name: 'Delete segment beta-customers' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Delete segment' }).click();
    await page.getByText('No segments yet in production.').waitFor();
    expect((await http(`${base}/api/segments/beta-customers`, { headers })).status).toBe(404);

    // The one 412 and the one 400 are the browser's log of the refused save and context above, which the console handled.
    expect(pageErrors.filter((e) => !/(412 \(Precondition Failed\)|400 \(Bad Request\))/.test(e))).toEqual([]);
  }, 120000);
});
