import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { freePort, http, killOnExit, waitFor } from '@flagship/testing';

const ROOT = join(__dirname, '../../../..');
const MAIN = join(ROOT, 'apps/management-api/src/main.ts');
const BUILT_MAIN = join(ROOT, 'dist/apps/management-api/apps/management-api/src/main.js');

/**
 * How the process is started: from the sources through ts-node (transpile only), so the test runs the
 * code it sits next to without a build first; or, when `npm test` has just built the tree
 * (TEST_APPS_BUILT=1, set after its build step passed), the built main.js, as the other e2e specs run
 * it: ts-node transpiles and loads the whole app on every start, about 4 s of CPU against 1 s.
 */
function command(): string[] {
  return process.env['TEST_APPS_BUILT'] === '1' ? [BUILT_MAIN] : ['-r', 'ts-node/register/transpile-only', '-r', 'tsconfig-paths/register', MAIN];
}

/** A management-api process of a test's own. */
export interface ManagementApiProcess {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** SIGTERM (the app drains and closes its pools), then waits for the exit. */
  stop(): Promise<void>;
  /** SIGKILL: the process dies where it is, its transactions uncommitted (a replica lost mid-way). */
  kill(): Promise<void>;
}

/**
 * Starts management-api as its own process, as `npm start` runs main.ts (from the sources, or the
 * build `npm test` has just made: `command()`). `env` is the
 * test's (its database, Redis prefix, and the dev IdP's PUBLIC_BASE_URL, so the other replica's ID
 * tokens verify); PORT is a free one. Its output goes to the test's stderr when TEST_LOG_LEVEL is set.
 */
export async function startManagementApiProcess(env: NodeJS.ProcessEnv, startTimeoutMs = 60_000): Promise<ManagementApiProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, command(), {
    cwd: ROOT,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', TS_NODE_PROJECT: join(ROOT, 'tsconfig.json') },
    stdio: ['ignore', process.env['TEST_LOG_LEVEL'] ? 'inherit' : 'ignore', 'inherit'],
  });
  killOnExit(child);
  const exited = once(child, 'exit');
  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(sig);
    await exited;
  };
  const stop = () => signal('SIGTERM');
  try {
    await Promise.race([
      waitFor(async () => (await http(`${url}/healthz`).catch(() => ({ status: 0 }))).status === 200, startTimeoutMs, 100),
      exited.then(([code]) => Promise.reject(new Error(`management-api exited (${String(code)}) before it answered`))),
    ]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stop, kill: () => signal('SIGKILL') };
}
