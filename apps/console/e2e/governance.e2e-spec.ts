/**
 * Flag governance in a real headless Chromium against the built management-api started as a
 * process: the owner requires approval in production; an editor (a second account, invited) edits a
 * flag there and the save becomes a change request they cannot approve themselves; the owner finds it
 * in the approval inbox, approves and applies it; then a change is scheduled in staging and
 * cancelled. Screenshots land in tmp/console-screenshots/governance-*.png, each screen checked with
 * axe. Skips only when no Chromium is found.
 */
import type { Page } from 'playwright-core';
import { http, waitFor } from '@flagship/testing';
import { CHROMIUM, HAVE_CHROMIUM, SESSION_KEY } from './chromium';
import { chooseOption, useConsoleStack } from './console-stack.fixture';

const PASSWORD = 'console-password-1';

if (!HAVE_CHROMIUM) {
  console.warn(`governance e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

(HAVE_CHROMIUM ? describe : describe.skip)('approvals and scheduled changes in the console (Chromium)', () => {
  const { started, shot, accessible } = useConsoleStack('governance');
  let base: string;
  let page: Page;

  const nav = async (link: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
  const signIn = async (email: string) => {
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  };
  const signOut = async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
  };
  const openFlag = async () => {
    await nav('Flags');
    await page.getByRole('link', { name: /^New checkout/ }).click();
    await page.getByRole('heading', { level: 1, name: /^New checkout/ }).waitFor();
  };

  it('requires approval, turns an editor’s save into a change request the owner approves and applies, and schedules and cancels a change', async () => {
    const { pageErrors } = started();
    ({ base, page } = started());
    const stamp = Date.now();
    const owner = `owner-${stamp}@flagship.test`;
    const editor = `editor-${stamp}@flagship.test`;

    // The owner signs up; a flag exists; the editor has an account and joins the owner's tenant.
    await page.goto(`${base}/console/`);
    await page.getByLabel('Email').fill(owner);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
    await page.getByRole('button', { name: 'Skip tour' }).click();
    // Expressions as strings: this file is type-checked for Node, without the DOM's globals.
    const s = (await page.evaluate(`JSON.parse(sessionStorage.getItem('${SESSION_KEY}') ?? '{}')`)) as { token: string; tenantId: string; tenants: { tenant_id: string; tenant_name: string }[] };
    const headers = { authorization: `Bearer ${s.token}`, 'x-tenant-id': s.tenantId };
    const tenantName = s.tenants.find((t) => t.tenant_id === s.tenantId)!.tenant_name;
    expect((await http(`${base}/api/flags`, { method: 'POST', headers, json: { key: 'new-checkout', name: 'New checkout', type: 'boolean', defaultValue: false, enabled: true } })).status).toBe(201);
    expect((await http(`${base}/dev/idp/accounts`, { method: 'POST', json: { email: editor, password: PASSWORD } })).status).toBe(201);
    const idToken = (await http<{ idToken: string }>(`${base}/dev/idp/token`, { method: 'POST', json: { email: editor, password: PASSWORD } })).body.idToken;
    expect((await http(`${base}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email: editor, password: PASSWORD } })).status).toBe(201);
    expect((await http(`${base}/api/tenants/${s.tenantId}/users`, { method: 'POST', headers, json: { email: editor, role: 'editor' } })).status).toBe(201);
    const asEditor = { authorization: `Bearer ${idToken}` };
    const invitation = (await http<{ id: string }[]>(`${base}/api/invitations`, { headers: asEditor })).body[0]!;
    expect((await http(`${base}/api/invitations/${invitation.id}/accept`, { method: 'POST', headers: asEditor })).status).toBe(200);

    // 1. The owner requires approval in production.
    await nav('Environments');
    const toggle = page.getByRole('switch', { name: /^Require approval in production$/i });
    // react-aria renders the input visually hidden under its indicator: clicked as the e2e of the flag switch does.
    await toggle.click({ force: true });
    await page.getByRole('switch', { name: /^Require approval in production$/i, checked: true }).waitFor();
    await shot('01-environments-require-approval');
    await accessible('environments, approval required in production');
    const envs = (await http<{ key: string; requireApproval: boolean }[]>(`${base}/api/environments`, { headers })).body;
    expect(envs.filter((e) => e.requireApproval).map((e) => e.key)).toEqual(['production']);
    await signOut();

    // 2. The editor, in the owner's tenant, edits the flag: the save is a change request.
    await signIn(editor);
    await chooseOption(page, page, /Tenant/, `${tenantName} (editor)`);
    // The welcome tour greets the editor in the tenant they joined; it would cover the screenshots.
    await page.getByRole('button', { name: 'Skip tour' }).click();
    await openFlag();
    // A rename would be saved directly (names are bookkeeping); targeting in production needs approval.
    await page.getByRole('textbox', { name: 'Targets served true' }).fill('alice');
    await page.getByRole('heading', { name: 'Changes in production need approval' }).waitFor();
    await page.getByRole('textbox', { name: 'Comment for the approver' }).fill('Alice joins the beta');
    await shot('02-editor-change-request-form');
    await accessible('flag editor, change request form');
    await page.getByRole('button', { name: 'Request approval' }).click();
    await page.getByText('Change request sent for approval: Individual targets.').waitFor();
    const mine = page.getByRole('article', { name: /Pending approval$/ });
    await mine.getByText('You made this request: another member must approve it.').waitFor();
    expect(await mine.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    await mine.getByText('Alice joins the beta').waitFor();
    await mine.scrollIntoViewIfNeeded();
    await shot('03-editor-own-request');
    await accessible('change requests, own request');
    // The flag itself did not change.
    const production = { ...headers, 'x-environment': 'production' };
    expect((await http<{ targets: unknown[] }>(`${base}/api/flags/new-checkout`, { headers: production })).body.targets).toEqual([]);
    await signOut();

    // 3. The owner finds it in the inbox, approves it, and applies it on the flag's page.
    await signIn(owner);
    await nav('Approvals');
    const waiting = page.getByRole('article', { name: `Change request by ${editor}, Pending approval` });
    await waiting.getByRole('table', { name: 'Individual targets' }).getByText('"alice"').waitFor();
    await shot('04-owner-inbox');
    await accessible('approval inbox');
    await waiting.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Nothing waits for your approval in production.').waitFor();
    await page.getByRole('link', { name: 'New checkout', exact: true }).waitFor({ state: 'detached' });
    await openFlag();
    const approved = page.getByRole('article', { name: `Change request by ${editor}, Approved, not applied` });
    await approved.getByRole('button', { name: 'Apply' }).click();
    const applied = page.getByRole('article', { name: `Change request by ${editor}, Applied` });
    await applied.waitFor();
    // The editor follows the flag as it moved on: the applied target is there.
    const served = page.getByRole('textbox', { name: 'Targets served true' });
    await waitFor(async () => (await served.inputValue()) === 'alice', 10000, 100);
    expect((await http<{ targets: { values: string[] }[] }>(`${base}/api/flags/new-checkout`, { headers: production })).body.targets.map((t) => t.values)).toEqual([['alice']]);
    await applied.scrollIntoViewIfNeeded();
    await shot('05-owner-applied');
    await accessible('change request applied');

    // 4. In staging (no approval), the owner schedules an edit for tomorrow, then cancels it.
    // Switched on the flag's page: the same URL read again for staging (no HTTP cache may answer it with production's).
    await chooseOption(page, page, /Environment/, 'Staging');
    await page.getByRole('heading', { name: 'Targeting in staging' }).waitFor();
    await page.getByRole('textbox', { name: 'Description' }).first().fill('Launch day');
    const tomorrow = new Date(Date.now() + 24 * 3600_000);
    const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('Schedule for').fill(local);
    await page.getByRole('button', { name: 'Schedule changes' }).click();
    await page.getByText(/^Scheduled for .*: Description\.$/).waitFor();
    const scheduled = page.getByRole('table', { name: 'Scheduled changes of New checkout' });
    const cancel = scheduled.getByRole('button', { name: /^Cancel the change scheduled for/ });
    await cancel.waitFor();
    await scheduled.scrollIntoViewIfNeeded();
    await shot('06-scheduled');
    await accessible('scheduled changes, pending');
    await cancel.click();
    await scheduled.getByRole('cell', { name: 'Cancelled' }).waitFor();
    await shot('07-scheduled-cancelled');
    const schedules = (await http<{ state: string }[]>(`${base}/api/flags/new-checkout/scheduled-changes`, { headers: { ...headers, 'x-environment': 'staging' } })).body;
    expect(schedules.map((x) => x.state)).toEqual(['cancelled']);
    expect(pageErrors).toEqual([]);
  }, 240000);
});
