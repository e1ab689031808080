// What the console's browser tests share: Debian's Chromium started as the issue asks, screenshots
// the console's CSP allows, and the axe check.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
export const SESSION_KEY = 'flagship.console.session';

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

export interface ChromiumPage {
  browser: BrowserContext;
  page: Page;
  pageErrors: string[];
  /** The context closed (and its profile removed, or the shared browser let go). */
  close(): Promise<void>;
}

/**
 * A fresh browser context and the page that collects its errors: in the run's shared Chromium
 * (shared-stack.fixture.ts) when there is one, otherwise a headless Chromium of its own on a fresh profile.
 * `wsEndpoint`: the shared Chromium's (from `sharedStack()`).
 */
export async function launchChromium(viewport: { width: number; height: number }, wsEndpoint?: string): Promise<ChromiumPage> {
  let browser: BrowserContext;
  let close: () => Promise<void>;
  if (wsEndpoint) {
    const shared = await chromium.connect(wsEndpoint);
    browser = await shared.newContext({ viewport });
    close = async () => {
      await browser.close();
      await shared.close();
    };
  } else {
    const profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
    browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport });
    close = async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    };
  }
  const page = browser.pages()[0] ?? (await browser.newPage());
  // A CSP violation or an uncaught error shows up here: the console must run under its strict policy.
  const pageErrors: string[] = [];
  page.on('console', (m) => m.type() === 'error' && pageErrors.push(m.text()));
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  return { browser, page, pageErrors, close };
}

export async function screenshot(page: Page, path: string, fullPage = true): Promise<void> {
  // caret 'initial': Playwright would otherwise inject a <style>, which the console's CSP rightly refuses.
  await page.screenshot({ path, fullPage, caret: 'initial' });
}

/** axe-core on the screen as it is: its serious and critical violations (none expected). */
export async function seriousViolations(page: Page, screen: string): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${screen}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join('; ')}`);
}

/** Long tasks (over 50 ms of blocked main thread) from the next page load on, as the browser reports them; read with `longTasks`. */
export async function watchLongTasks(page: Page): Promise<void> {
  await page.addInitScript(
    'window.__longTasks = []; new PerformanceObserver((l) => l.getEntries().forEach((e) => window.__longTasks.push(Math.round(e.duration)))).observe({ type: "longtask", buffered: true });',
  );
}
export const longTasks = async (page: Page): Promise<number[]> => (await page.evaluate('window.__longTasks')) as number[];

/** Reload, then time the first of `rows` and all `expected` of them. */
export async function timeReload(page: Page, rows: Locator, expected: number): Promise<{ firstRowsMs: number; allRowsMs: number }> {
  const started = Date.now();
  await page.reload();
  await rows.first().waitFor();
  const firstRowsMs = Date.now() - started;
  await rows.nth(expected - 1).waitFor({ timeout: 20000 });
  const allRowsMs = Date.now() - started;
  const count = await rows.count();
  if (count !== expected) throw new Error(`${count} rows, not ${expected}`);
  return { firstRowsMs, allRowsMs };
}
