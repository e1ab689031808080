/**
 * The console's IDP_MODE=oidc sign-in in a real headless Chromium: a real OpenID provider
 * (`oidc-provider`, started by this test as a process on loopback, one public client with PKCE
 * required), the built management-api started as `npm start` runs it with IDP_MODE=oidc pointing at
 * it, serving the built console. The user clicks "Sign in with Acme ID", logs in and consents at the
 * provider, and lands back signed in on the flags page; an answer whose state was tampered with is
 * refused. Screenshots land in tmp/console-screenshots/. Skips only when no Chromium is found.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { createTestEnvironment, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';
import { CHROMIUM, type ChromiumPage, HAVE_CHROMIUM, launchChromium, screenshot, seriousViolations, SESSION_KEY } from './chromium';
import { sharedStack } from './shared-stack.fixture';

const ROOT = join(__dirname, '../../..');
const MAIN = join(ROOT, 'dist/apps/management-api/apps/management-api/src/main.js');
const CONSOLE_DIR = join(ROOT, 'dist/apps/console');
const SHOTS = join(ROOT, 'tmp/console-screenshots');
const CLIENT_ID = 'flagship-console';

if (!HAVE_CHROMIUM) {
  console.warn(`console OIDC e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
}

async function stop(proc: ChildProcess | undefined): Promise<void> {
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    proc.kill('SIGTERM');
    await once(proc, 'exit');
  }
}

(HAVE_CHROMIUM ? describe : describe.skip)('console sign-in with an OpenID provider (IDP_MODE=oidc)', () => {
  let te: TestEnvironment;
  let idp: ChildProcess;
  let api: ChildProcess;
  let base: string;
  let issuer: string;
  let chromium: ChromiumPage;
  let browser: BrowserContext;
  let page: Page;
  /** Errors of the console's own pages (a CSP violation shows up here); the provider's pages are its business. */
  const consoleErrors: string[] = [];
  /** Every request the browser sent, to show no token went into a URL. */
  const urls: string[] = [];

  const shot = (name: string) => screenshot(page, join(SHOTS, `${name}.png`));
  const session = async () => (await page.evaluate(`sessionStorage.getItem('${SESSION_KEY}')`)) as string | null;

  beforeAll(async () => {
    for (const built of [MAIN, join(CONSOLE_DIR, 'index.html')]) {
      if (!existsSync(built)) throw new Error(`${built} is missing: run \`npx nx run-many -t build -p management-api console\` first`);
    }
    mkdirSync(SHOTS, { recursive: true });
    te = await createTestEnvironment();
    const [apiPort, idpPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${apiPort}`;
    issuer = `http://127.0.0.1:${idpPort}`;

    idp = spawn(process.execPath, [join(__dirname, 'oidc-provider.mjs')], {
      cwd: ROOT,
      env: { PATH: process.env['PATH'], NODE_ENV: 'development', PORT: String(idpPort), CLIENT_ID, REDIRECT_URI: `${base}/console/auth/callback` },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitFor(async () => (await http(`${issuer}/.well-known/openid-configuration`).catch(() => ({ status: 0 }))).status === 200, 20000, 100);

    api = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: {
        ...te.env,
        NODE_ENV: 'development',
        PORT: String(apiPort),
        PUBLIC_BASE_URL: base,
        CONSOLE_DIR,
        RATE_LIMIT_IP_PER_MINUTE: '1000',
        IDP_MODE: 'oidc',
        IDP_ISSUER: issuer,
        IDP_JWKS_URI: `${issuer}/jwks`,
        IDP_CLIENT_ID: CLIENT_ID,
        IDP_PROVIDER_NAME: 'oidc.acme',
        IDP_DISPLAY_NAME: 'Acme ID',
      },
      stdio: 'ignore',
    });
    await waitFor(async () => (await http(`${base}/healthz`)).status === 200, 20000, 100);
    // A context of the run's shared Chromium when there is one; the API is this spec's own (IDP_MODE oidc).
    chromium = await launchChromium({ width: 1280, height: 860 }, (await sharedStack())?.wsEndpoint);
    ({ browser, page } = chromium);
    // Loopback only: the provider's development login page asks for a web font, which never leaves the machine.
    await browser.route((url) => url.hostname !== '127.0.0.1', (route) => route.abort('blockedbyclient'));
    page.on('request', (r) => urls.push(r.url()));
    page.on('console', (m) => m.type() === 'error' && m.location().url.startsWith(base) && consoleErrors.push(`${m.location().url}: ${m.text()}`));
    page.on('pageerror', (e) => page.url().startsWith(base) && consoleErrors.push(String(e)));
  }, 60000);

  afterAll(async () => {
    await chromium?.close();
    await stop(api);
    await stop(idp);
    await te?.teardown();
  });

  it('signs in at the provider with PKCE, consents, and lands back signed in on the flags page', async () => {
    const res = await page.goto(`${base}/console/`);
    // The console may call the provider's origin and no other.
    expect(res?.headers()['content-security-policy']).toContain(`connect-src 'self' ${issuer};`);
    const button = page.getByRole('button', { name: 'Sign in with Acme ID' });
    await button.waitFor();
    expect(await page.getByLabel('Password').count()).toBe(0);
    await shot('oidc-01-sign-in');
    expect(await seriousViolations(page, 'oidc sign-in')).toEqual([]);

    await button.click();
    // The provider's own login page (its development interactions): any login, this user's e-mail.
    await page.waitForURL(`${issuer}/**`);
    const authorize = new URL(urls.find((u) => u.startsWith(`${issuer}/auth?`)) ?? 'http://none.invalid');
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${base}/console/auth/callback`);
    for (const p of ['code_challenge', 'state', 'nonce']) expect(authorize.searchParams.get(p)).toMatch(/^[\w-]{20,}$/);
    await page.locator('input[name="login"]').fill('ada@acme.test');
    await page.locator('input[name="password"]').fill('any-password');
    await shot('oidc-02-provider-login');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    // Consent, then back to the console's callback.
    await page.getByRole('button', { name: 'Continue' }).waitFor();
    await shot('oidc-03-provider-consent');
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.getByRole('heading', { name: 'Flags in production' }).waitFor({ timeout: 20000 });
    await page.getByText('ada@acme.test').waitFor();
    await page.getByText('No flags yet in this tenant.').waitFor();
    await shot('oidc-04-signed-in');
    // The code left the address bar; the ID token is in sessionStorage only, never in a URL.
    expect(new URL(page.url()).pathname).toBe('/console/');
    expect(page.url()).not.toContain('code=');
    const stored = JSON.parse((await session()) ?? '{}') as { token: string; tenantId: string; email: string; tenants: unknown[] };
    expect(stored.email).toBe('ada@acme.test');
    expect(stored.tenants).toHaveLength(1);
    expect(stored.token).toMatch(/^ey/);
    expect(urls.filter((u) => u.includes(stored.token))).toEqual([]);
    expect(await page.evaluate("sessionStorage.getItem('flagship.console.oidc-pending')")).toBeNull();
    // The same token works on the API as the console's session does.
    const tenants = await http(`${base}/api/tenants`, { headers: { authorization: `Bearer ${stored.token}` } });
    expect(tenants.status).toBe(200);
    // The tenant switcher shows the bootstrap's tenant.
    await page.getByRole('button', { name: /Tenant/ }).waitFor();
    expect(consoleErrors).toEqual([]);
  }, 90000);

  it('refuses an answer whose state was tampered with, and offers the way back', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    const button = page.getByRole('button', { name: 'Sign in with Acme ID' });
    await button.waitFor();
    const seen = urls.length;
    // The authorization request the console makes is held back (the provider, remembering the user and
    // the grant, would answer it at once) and sent again with another state: the provider answers that
    // with a real code, but not for the sign-in this tab started (the login CSRF that state stops).
    let started: URL | undefined;
    await page.route(`${issuer}/auth?**`, async (route) => {
      const url = new URL(route.request().url());
      if (url.searchParams.get('state') === 'tampered-state') return route.continue();
      started = url;
      await route.abort('aborted');
    });
    await button.click();
    await waitFor(async () => started !== undefined, 10000, 50);
    const forged = new URL(started!);
    forged.searchParams.set('state', 'tampered-state');
    await page.goto(forged.href);
    // Still logged in at the provider with the grant given, it may answer at once, or ask again.
    await page.waitForURL((u) => u.href.startsWith(`${base}/console/`) || u.pathname.startsWith('/interaction/'));
    if (page.url().startsWith(issuer)) {
      if (await page.locator('input[name="login"]').count()) {
        await page.locator('input[name="login"]').fill('ada@acme.test');
        await page.locator('input[name="password"]').fill('any-password');
        await page.getByRole('button', { name: 'Sign-in' }).click();
      }
      const consent = page.getByRole('button', { name: 'Continue' });
      if (await consent.count()) await consent.click();
    }
    const alert = page.getByRole('alert');
    await alert.waitFor({ timeout: 20000 });
    expect(await alert.textContent()).toContain('does not belong to the sign-in started in this tab');
    // A real code came back with the tampered state, and the console did not exchange it.
    const answer = urls.slice(seen).find((u) => u.startsWith(`${base}/console/auth/callback?`)) ?? '';
    expect(new URL(answer || 'http://none.invalid').searchParams.get('state')).toBe('tampered-state');
    expect(new URL(answer || 'http://none.invalid').searchParams.get('code')).toBeTruthy();
    expect(urls.slice(seen).filter((u) => u === `${issuer}/token`)).toEqual([]);
    expect(await session()).toBeNull();
    expect(page.url()).not.toContain('code=');
    await shot('oidc-05-tampered-state');
    expect(await seriousViolations(page, 'oidc refused')).toEqual([]);
    await page.unroute(`${issuer}/auth?**`);

    await page.getByRole('link', { name: 'Back to sign-in' }).click();
    await page.getByRole('button', { name: 'Sign in with Acme ID' }).waitFor();
    expect(consoleErrors).toEqual([]);
  }, 90000);

  it('says so when the user cancels at the provider, and signs nobody in', async () => {
    // A new user at the provider (its session cookies gone), who is asked to consent and cancels.
    await browser.clearCookies();
    await page.getByRole('button', { name: 'Sign in with Acme ID' }).click();
    await page.locator('input[name="login"]').fill('bob@acme.test');
    await page.locator('input[name="password"]').fill('any-password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('link', { name: '[ Cancel ]' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor({ timeout: 20000 });
    expect(await alert.textContent()).toContain('Sign-in was cancelled or access was denied at Acme ID.');
    await shot('oidc-06-denied');
    expect(await session()).toBeNull();
    expect(page.url()).not.toContain('error=');
    await page.getByRole('link', { name: 'Back to sign-in' }).click();
    await page.getByRole('button', { name: 'Sign in with Acme ID' }).waitFor();
    expect(consoleErrors).toEqual([]);
  }, 90000);
});
