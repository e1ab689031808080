// The stack the console's browser tests run on: the built management-api serving the built console,
// on a test environment (its own database and Redis prefix), and a Chromium context pointed at it.
// In a jest run of the console project both come from the run's shared stack (shared-stack.fixture.ts);
// a spec that needs other settings gets a stack of its own.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { createTestEnvironment } from '@flagship/testing';
import { launchChromium, screenshot, seriousViolations, SESSION_KEY } from './chromium';
import { SHARED_API_ENV, sharedStack, startConsoleApi } from './shared-stack.fixture';

export { CONSOLE_DIR, MANAGEMENT_API_MAIN } from './shared-stack.fixture';

/** The built management-api serving the built console, started as `npm start` starts it, and a Chromium context on it. */
export interface ConsoleStack {
  base: string;
  /** The API's database, Redis prefix and log settings: for another app a spec starts beside it. */
  env: NodeJS.ProcessEnv;
  databaseUrl: string;
  browser: BrowserContext;
  page: Page;
  pageErrors: string[];
  /** The browser context closed; a stack of the spec's own also stopped and its test environment torn down. */
  stop(): Promise<void>;
}

const ROOT = join(__dirname, '../../..');
export const SHOTS = join(ROOT, 'tmp/console-screenshots');

/**
 * `env`: more of management-api's settings (WEBHOOKS_ALLOW_PRIVATE_URLS for a receiver on loopback):
 * the shared stack when it has them all (SHARED_API_ENV), otherwise a management-api of the spec's own.
 */
export async function startConsoleStack(viewport: { width: number; height: number }, env: NodeJS.ProcessEnv = {}): Promise<ConsoleStack> {
  const shared = Object.entries(env).every(([k, v]) => SHARED_API_ENV[k] === v) ? await sharedStack() : undefined;
  if (shared) {
    const chromium = await launchChromium(viewport, shared.wsEndpoint);
    return { base: shared.base, env: { ...process.env, ...shared.env }, databaseUrl: shared.databaseUrl, ...chromium, stop: chromium.close };
  }
  const te = await createTestEnvironment();
  const api = await startConsoleApi(te, { RATE_LIMIT_IP_PER_MINUTE: '1000', ...env }).catch(async (e) => {
    await te.teardown();
    throw e;
  });
  const stopApi = async () => {
    await api.stop();
    await te.teardown();
  };
  const chromium = await launchChromium(viewport);
  return {
    base: api.base,
    env: te.env,
    databaseUrl: te.db.url,
    ...chromium,
    stop: async () => {
      await chromium.close();
      await stopApi();
    },
  };
}

/** A react-aria Select: open it by its label (within `scope`), pick the option (its list opens on the page). */
export async function chooseOption(page: Page, scope: Page | Locator, label: RegExp, option: string): Promise<void> {
  await scope.getByRole('button', { name: label }).click();
  await page.getByRole('option', { name: option, exact: true }).click();
}

/**
 * `count` plain boolean flags as LaunchDarkly SDK data for POST /api/flags/import, keyed bulk-0000
 * upwards, every other one on: the rows of the console's long-list screens.
 */
export function bulkFlags(count: number): Record<string, unknown> {
  return Object.fromEntries(
    Array.from({ length: count }, (_, i) => {
      const key = `bulk-${String(i).padStart(4, '0')}`;
      return [key, { key, on: i % 2 === 0, variations: [true, false], offVariation: 1, fallthrough: { variation: 0 }, targets: [], rules: [], prerequisites: [], salt: key }];
    }),
  );
}

/**
 * A new account signed up through the console's own form (a tenant of its own, admin), the welcome tour
 * skipped (it would cover screenshots), and the session's token as headers for API calls beside the page.
 */
export async function signUpInConsole(page: Page, base: string, prefix: string): Promise<{ tenantId: string; headers: Record<string, string> }> {
  await page.goto(`${base}/console/`);
  await page.getByLabel('Email').fill(`${prefix}-${Date.now()}@flagship.test`);
  await page.getByLabel('Password').fill('console-password-1');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('heading', { name: 'Flags in production' }).waitFor();
  // Expressions as strings: this file is type-checked for Node, without the DOM's globals.
  const session = (await page.evaluate(`JSON.parse(sessionStorage.getItem('${SESSION_KEY}') ?? '{}')`)) as { token: string; tenantId: string };
  await page.getByRole('button', { name: 'Skip tour' }).click();
  return { tenantId: session.tenantId, headers: { authorization: `Bearer ${session.token}`, 'x-tenant-id': session.tenantId, 'x-environment': 'production' } };
}

/**
 * A describe block's stack: started before its tests and stopped after them, with the two checks
 * every screen gets (a screenshot named `<prefix>-<name>.png`, and axe's serious violations, none).
 */
export function useConsoleStack(prefix: string, viewport = { width: 1280, height: 900 }) {
  let stack: ConsoleStack | undefined;
  const started = (): ConsoleStack => {
    if (!stack) throw new Error('the console stack is not started (use it inside a test)');
    return stack;
  };
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stack = await startConsoleStack(viewport);
  }, 60000);
  afterAll(async () => stack?.stop());
  return {
    started,
    shot: (name: string, fullPage = true) => screenshot(started().page, join(SHOTS, `${prefix}-${name}.png`), fullPage),
    accessible: async (screen: string) => expect(await seriousViolations(started().page, screen)).toEqual([]),
  };
}
