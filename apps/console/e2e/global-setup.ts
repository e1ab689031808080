/**
 * jest's globalSetup for the console project: starts the shared stack (shared-stack.fixture.ts) when this run
 * includes a browser spec and Chromium is there, without waiting for it (the workers wait for its
 * file), so the rest of the run is not held up by its boot.
 */
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from 'jest';
import { HAVE_CHROMIUM } from './chromium';

const ROOT = join(__dirname, '../../..');

/** The browser specs the run will include: none when TEST_KIND leaves e2e out or no path pattern names one. */
function browserSpecsSelected(globalConfig: { testPathPatterns?: { patterns?: string[] } }): boolean {
  if (process.env['TEST_KIND'] && process.env['TEST_KIND'] !== 'e2e') return false;
  // Each spec with a stack of its own, as before the shared one (to compare, or to look at one alone).
  if (process.env['CONSOLE_STACK_PER_SPEC'] === '1') return false;
  const patterns = globalConfig.testPathPatterns?.patterns ?? [];
  if (patterns.length === 0) return true;
  const specs = readdirSync(__dirname)
    .filter((f) => f.endsWith('.e2e-spec.ts') || f.endsWith('.e2e-group.ts'))
    .map((f) => join(__dirname, f));
  return specs.some((spec) => patterns.some((p) => new RegExp(p, 'i').test(spec)));
}

export default async function globalSetup(globalConfig: Config): Promise<void> {
  if (!HAVE_CHROMIUM || !browserSpecsSelected(globalConfig as never)) return;
  // globalSetup runs outside jest's module registry: its path aliases come from tsconfig-paths, and
  // everything is required now, while jest's transform hook is installed.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { register } = require('tsconfig-paths') as typeof import('tsconfig-paths');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const unregister = register({ baseUrl: ROOT, paths: require(join(ROOT, 'tsconfig.base.json')).compilerOptions.paths });
  let start: typeof import('./shared-stack.fixture').startSharedStack;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ({ startSharedStack: start } = require('./shared-stack.fixture') as typeof import('./shared-stack.fixture'));
  } finally {
    unregister();
  }
  const file = join(tmpdir(), `console-shared-stack-${process.pid}-${Date.now()}.json`);
  process.env['CONSOLE_SHARED_STACK'] = file;
  (globalThis as { consoleSharedStack?: ReturnType<typeof start> }).consoleSharedStack = start(file);
}
