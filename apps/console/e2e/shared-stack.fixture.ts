/**
 * One management-api (built, serving the built console) and one Chromium for the whole jest run of the
 * console's browser specs, instead of one of each per spec file: started by jest's globalSetup
 * (global-setup.ts) without holding up the run, stopped by its globalTeardown. The workers find it
 * through the file `CONSOLE_SHARED_STACK` names, written once both answer. Each spec keeps its own
 * isolation: its own tenant (signed up through the console) and its own browser context (cookies,
 * storage, viewport), on the same database and Redis prefix.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserServer } from 'playwright-core';
import { createTestEnvironment, freePort, http, killOnExit, waitFor, type TestEnvironment } from '@flagship/testing';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium';

const ROOT = join(__dirname, '../../..');
export const MANAGEMENT_API_MAIN = join(ROOT, 'dist/apps/management-api/apps/management-api/src/main.js');
export const CONSOLE_DIR = join(ROOT, 'dist/apps/console');

/**
 * management-api's settings on the shared stack beyond the dev defaults: a spec that needs only these
 * gets the shared stack, any other setting a stack of its own. The IP limit is the in-process
 * fixture's, since several specs' browsers call from one address; private webhook URLs let a spec's
 * receiver listen on loopback; the free plan's rate limit is lifted for the 1,000-flag screens.
 */
export const SHARED_API_ENV: Readonly<Record<string, string>> = {
  RATE_LIMIT_IP_PER_MINUTE: '100000',
  RATE_LIMIT_FREE: '100000',
  WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
};

/**
 * The built management-api serving the built console on a free port, started as `npm start` starts
 * it on `te`'s database and Redis prefix, once it answers /healthz (stopped again when it does not).
 */
export async function startConsoleApi(te: TestEnvironment, env: NodeJS.ProcessEnv): Promise<{ base: string; stop(): Promise<void> }> {
  for (const built of [MANAGEMENT_API_MAIN, join(CONSOLE_DIR, 'index.html')]) {
    if (!existsSync(built)) throw new Error(`${built} is missing: run \`npx nx run-many -t build -p management-api console\` first`);
  }
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawn(process.execPath, [MANAGEMENT_API_MAIN], {
    cwd: ROOT,
    env: { ...te.env, NODE_ENV: 'development', IDP_MODE: 'dev', PORT: String(port), PUBLIC_BASE_URL: base, CONSOLE_DIR, ...env },
    stdio: 'ignore',
  });
  killOnExit(proc);
  const stop = async () => {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      await once(proc, 'exit');
    }
  };
  try {
    await waitFor(async () => (await http(`${base}/healthz`)).status === 200, 60000, 100);
  } catch (e) {
    await stop();
    throw e;
  }
  return { base, stop };
}

/** What a worker reads of the shared stack. */
export interface SharedStack {
  base: string;
  wsEndpoint: string;
  /** The apps' database, Redis prefix and log settings (for another app a spec starts beside it). */
  env: Record<string, string>;
  databaseUrl: string;
}

/** The shared stack of this jest run, waiting until it answers; undefined outside such a run. */
export async function sharedStack(): Promise<SharedStack | undefined> {
  const file = process.env['CONSOLE_SHARED_STACK'];
  if (!file) return undefined;
  const read = await waitFor(async () => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as SharedStack | { error: string }) : undefined), 120000, 100);
  if ('error' in read) throw new Error(`the shared console stack did not start: ${read.error}`);
  return read;
}

export interface RunningSharedStack {
  stop(): Promise<void>;
}

/** Starts the stack and writes its SharedStack (or the error) to `file` when done; resolves then. */
export async function startSharedStack(file: string): Promise<RunningSharedStack> {
  let te: TestEnvironment | undefined;
  let api: { stop(): Promise<void> } | undefined;
  let server: BrowserServer | undefined;
  const stop = async () => {
    await server?.close();
    await api?.stop();
    await te?.teardown();
    rmSync(file, { force: true });
  };
  const publish = (value: SharedStack | { error: string }) => {
    writeFileSync(`${file}.tmp`, JSON.stringify(value));
    renameSync(`${file}.tmp`, file);
  };
  // Chromium starts while the database and the API do; awaited below (a failure is published then).
  const launching = chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  launching.catch(() => undefined);
  try {
    te = await createTestEnvironment();
    const started = await startConsoleApi(te, SHARED_API_ENV);
    api = started;
    server = await launching;
    const { DATABASE_URL, DATABASE_POOL_SIZE, METRICS_PORT, REDIS_URL, REDIS_KEY_PREFIX, LOG_LEVEL } = te.env as Record<string, string>;
    publish({ base: started.base, wsEndpoint: server.wsEndpoint(), env: { DATABASE_URL, DATABASE_POOL_SIZE, METRICS_PORT, REDIS_URL, REDIS_KEY_PREFIX, LOG_LEVEL }, databaseUrl: te.db.url });
  } catch (e) {
    server ??= await launching.catch(() => undefined);
    publish({ error: e instanceof Error ? e.message : String(e) });
  }
  return { stop };
}
