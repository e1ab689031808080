/**
 * management-api -> Postgres + Redis -> orep-server, both built apps started as processes (as
 * `npm start` runs them) on a test environment of their own: what the e2e spec asserts (every change
 * is told) and tools/bench/flag-propagation.ts times (how soon).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createTestEnvironment, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';

const root = join(__dirname, '..', '..');
const main = (app: string) => join(root, 'dist/apps', app, 'apps', app, 'src/main.js');
const OREP_TOKEN = 'e2e-orep-token';

export interface PropagationStack {
  /** orep-server's answer for the flag `live` (a number; -1 when it does not know the flag). */
  orepValue(): Promise<unknown>;
  /** Sets `live`'s default value through management-api's PATCH. */
  patch(value: number): Promise<number>;
  stop(): Promise<void>;
}

/** The two apps on a fresh test environment, one tenant, its number flag `live` at 0. */
export async function startPropagationStack(): Promise<PropagationStack> {
  const te: TestEnvironment = await createTestEnvironment();
  const procs: ChildProcess[] = [];
  const stop = async () => {
    for (const p of procs) {
      p.kill('SIGTERM');
      if (p.exitCode === null) await once(p, 'exit');
    }
    await te.teardown();
  };
  const start = async (app: string, env: NodeJS.ProcessEnv, port: number) => {
    const child = spawn(process.execPath, [main(app)], { env: { ...te.env, NODE_ENV: 'development', ...env }, stdio: 'ignore' });
    procs.push(child);
    await waitFor(async () => (await http(`http://127.0.0.1:${port}/healthz`)).status === 200, 20000, 100);
  };
  try {
    const apiPort = await freePort();
    const api = `http://127.0.0.1:${apiPort}`;
    await start('management-api', { IDP_MODE: 'dev', PORT: String(apiPort), PUBLIC_BASE_URL: api, RATE_LIMIT_FREE: '1000000', RATE_LIMIT_IP_PER_MINUTE: '1000' }, apiPort);
    const email = 'propagation@flagship.test';
    const { idToken } = (await http(`${api}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'long-enough-1' } })).body;
    const signup = await http(`${api}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: 'long-enough-1' } });
    const tenantId = signup.body.data.canonical_tenant_id as string;
    const headers = { authorization: `Bearer ${idToken}`, 'x-tenant-id': tenantId };
    const created = await http(`${api}/api/flags`, { method: 'POST', headers, json: { key: 'live', name: 'live', type: 'number', defaultValue: 0, enabled: true } });
    if (created.status !== 201) throw new Error(`creating the flag answered ${created.status}`);
    const orepPort = await freePort();
    const orep = `http://127.0.0.1:${orepPort}`;
    await start('orep-server', { OREP_PORT: String(orepPort), OREP_AUTH_TOKEN: OREP_TOKEN, OREP_TENANT_ID: tenantId, OREP_ENVIRONMENT: 'production' }, orepPort);
    return {
      orepValue: async () => {
        const res = await fetch(`${orep}/v1/flags/live/evaluate`, {
          method: 'POST',
          headers: { authorization: `Bearer ${OREP_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ defaultValue: -1, type: 'number', context: { targetingKey: 'u1' } }),
        });
        return ((await res.json()) as { value: unknown }).value;
      },
      patch: async (value) => (await http(`${api}/api/flags/live`, { method: 'PATCH', headers, json: { defaultValue: value } })).status,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * `changes` PATCHes one after another, each polled on orep-server until it answers the new value:
 * the delays from each PATCH's answer, sorted. Throws when a PATCH fails or a change is not visible
 * within `limitMs`.
 */
export async function propagationDelays(stack: PropagationStack, changes: number, limitMs: number): Promise<number[]> {
  const delays: number[] = [];
  for (let i = 1; i <= changes; i++) {
    const status = await stack.patch(i);
    if (status !== 200) throw new Error(`PATCH ${i} answered ${status}`);
    const t0 = performance.now();
    while ((await stack.orepValue()) !== i) {
      if (performance.now() - t0 > limitMs) throw new Error(`change ${i} not visible after ${limitMs} ms`);
    }
    delays.push(performance.now() - t0);
  }
  return delays.sort((a, b) => a - b);
}

/** The q-quantile (0..1] of sorted delays. */
export const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
