// What the console's browser tests share: Debian's Chromium started as the issue asks, screenshots
// the console's CSP allows, and the axe check.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import axe from 'axe-core';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
export const SESSION_KEY = 'flagship.console.session';

const AXE_SOURCE: string = axe.source;
/** What AxeBuilder evaluates in place of axe-core's source, which `axeViolations` has put in the page. */
const AXE_ALREADY_IN_PAGE = ';';

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

/**
 * axe-core on the screen as it is: its violations of `impacts` (serious and critical unless given),
 * each as one line naming the screen, the rule and the nodes; none expected. Legacy mode runs
 * `axe.run` in the page: the default opens a new tab for every check to merge per-frame results
 * (the console has no frames), which was half of each check's time (segments' nine: 20.4 s, 10.5 s).
 */
export async function axeViolations(page: Page, screen: string, impacts: readonly string[] = ['serious', 'critical']): Promise<string[]> {
  // axe-core is put in the page once per document: AxeBuilder evaluates its 550 KB again on every
  // check, twice in legacy mode (47 checks of the console's group: 27.2 s against 21.6 s once).
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const result = await new AxeBuilder({ page, axeSource: AXE_ALREADY_IN_PAGE }).setLegacyMode().analyze();
  return result.violations
    .filter((v) => impacts.includes(v.impact ?? ''))
    .map((v) => `${screen}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join('; ')}`);
}

/** axe's serious and critical violations (none expected). */
export const seriousViolations = (page: Page, screen: string): Promise<string[]> => axeViolations(page, screen);

/** Every impact axe reports, down to minor. */
export const ALL_IMPACTS = ['minor', 'moderate', 'serious', 'critical'] as const;

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
