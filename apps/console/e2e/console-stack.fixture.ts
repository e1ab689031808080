// The stack the console's browser tests run on: the built management-api serving the built console,
// on a fresh test environment (its own database and Redis prefix), and a Chromium pointed at it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { createTestEnvironment, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';
import { launchChromium, screenshot, seriousViolations, SESSION_KEY } from './chromium';

/** The built management-api serving the built console, started as `npm start` starts it, and a Chromium on it. */
export interface ConsoleStack {
  te: TestEnvironment;
  base: string;
  browser: BrowserContext;
  page: Page;
  pageErrors: string[];
  /** Chromium closed, its profile removed, the API stopped, the test environment torn down. */
  stop(): Promise<void>;
}

const ROOT = join(__dirname, '../../..');
export const MANAGEMENT_API_MAIN = join(ROOT, 'dist/apps/management-api/apps/management-api/src/main.js');
export const CONSOLE_DIR = join(ROOT, 'dist/apps/console');
export const SHOTS = join(ROOT, 'tmp/console-screenshots');

/** `env`: more of management-api's settings (WEBHOOKS_ALLOW_PRIVATE_URLS for a receiver on loopback). */
export async function startConsoleStack(viewport: { width: number; height: number }, env: NodeJS.ProcessEnv = {}): Promise<ConsoleStack> {
  for (const built of [MANAGEMENT_API_MAIN, join(CONSOLE_DIR, 'index.html')]) {
    if (!existsSync(built)) throw new Error(`${built} is missing: run \`npx nx run-many -t build -p management-api console\` first`);
  }
  const te = await createTestEnvironment();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawn(process.execPath, [MANAGEMENT_API_MAIN], {
    cwd: ROOT,
    env: { ...te.env, NODE_ENV: 'development', IDP_MODE: 'dev', PORT: String(port), PUBLIC_BASE_URL: base, CONSOLE_DIR, RATE_LIMIT_IP_PER_MINUTE: '1000', ...env },
    stdio: 'ignore',
  });
  const stopApi = async () => {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    }
    await te.teardown();
  };
  try {
    await waitFor(async () => (await http(`${base}/healthz`)).status === 200, 20000, 100);
  } catch (e) {
    await stopApi();
    throw e;
  }
  const { browser, page, profile, pageErrors } = await launchChromium(viewport);
  return {
    te,
    base,
    browser,
    page,
    pageErrors,
    stop: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
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
