/**
 * Unleash server 8.x, the peer tools/bench/evaluate-endpoint.ts compares against: installed on first
 * use into the git-ignored tmp/bench-peers/unleash (never into the project's package.json), started
 * on a database of its own with its rate limits lifted, given the bench's toggle as 20 strategies of
 * one constraint each (the 20th matches) and a frontend token, and evaluated through its frontend API.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, http, waitFor } from '@flagship/testing';

export const UNLEASH_VERSION = '8.2.0';
const ADMIN_TOKEN = '*:*.bench-admin-secret';
const FRONTEND_TOKEN = 'default:development.bench-frontend-secret';

export interface UnleashPeer {
  url: string;
  /** The frontend API request that evaluates the toggle for the bench's context. */
  request: { url: string; method: 'POST'; headers: Record<string, string>; body: string };
  database: string;
  stop(): Promise<void>;
}

/** `npm install --prefix tmp/bench-peers/unleash unleash-server@8.2.0 --no-save`, once. */
export function ensureUnleashInstalled(root: string): string {
  const prefix = join(root, 'tmp', 'bench-peers', 'unleash');
  const server = join(prefix, 'node_modules', 'unleash-server', 'dist', 'server.js');
  if (!existsSync(server)) {
    console.log(`installing unleash-server@${UNLEASH_VERSION} into ${prefix} (first use only)...`);
    execFileSync('npm', ['install', '--prefix', prefix, `unleash-server@${UNLEASH_VERSION}`, '--no-save', '--no-audit', '--no-fund'], { stdio: 'inherit' });
  }
  return server;
}

/** `adminUrl`: a Postgres URL whose server may create the peer's database (the test server, user postgres). */
export async function startUnleash(root: string, adminUrl: string, flagKey: string): Promise<UnleashPeer> {
  const server = ensureUnleashInstalled(root);
  const database = `bench_unleash_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${database}`;

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, [server], {
    env: {
      PATH: process.env['PATH'],
      TZ: 'UTC',
      NODE_ENV: 'production',
      HTTP_PORT: String(port),
      HTTP_HOST: '127.0.0.1',
      DATABASE_URL: dbUrl.toString(),
      DATABASE_SSL: 'false',
      LOG_LEVEL: 'warn',
      CHECK_VERSION: 'false',
      SEND_TELEMETRY: 'false',
      INIT_ADMIN_API_TOKENS: ADMIN_TOKEN,
      INIT_FRONTEND_API_TOKENS: FRONTEND_TOKEN,
      // Its rate limits lifted, as ours are.
      SDK_API_RATE_LIMIT_PER_MINUTE: '100000000',
      TOKEN_AUTHENTICATION_RATE_LIMIT_PER_MINUTE: '100000000',
      REGISTER_FRONTEND_RATE_LIMIT_PER_MINUTE: '100000000',
      FRONTEND_METRICS_RATE_LIMIT_PER_MINUTE: '100000000',
      CLIENT_METRICS_RATE_LIMIT_PER_MINUTE: '100000000',
      REGISTER_CLIENT_RATE_LIMIT_PER_MINUTE: '100000000',
      // Changes reach the frontend API's cache quickly (the toggle is created just before the run).
      FRONTEND_API_REFRESH_INTERVAL_MS: '1000',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    const a = new Client({ connectionString: adminUrl });
    await a.connect();
    await a.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await a.end();
  };
  try {
    // The first start runs Unleash's migrations.
    await waitFor(async () => (await http(`${url}/health`).catch(() => ({ status: 0 }))).status === 200, 180_000, 500);
    const headers = { authorization: ADMIN_TOKEN, 'content-type': 'application/json' };
    const call = async (method: string, path: string, json?: unknown): Promise<void> => {
      const res = await http(`${url}${path}`, { method, headers, json });
      if (res.status >= 300 && !(res.status === 409 && path === '/api/admin/context')) throw new Error(`unleash ${method} ${path}: ${res.status} ${res.text}`);
    };
    await call('POST', '/api/admin/context', { name: 'country', stickiness: false });
    await call('POST', '/api/admin/projects/default/features', { name: flagKey, type: 'release' });
    const base = `/api/admin/projects/default/features/${flagKey}/environments/development`;
    for (let i = 0; i < 20; i++) {
      await call('POST', `${base}/strategies`, {
        name: 'flexibleRollout',
        constraints: [{ contextName: 'country', operator: 'IN', values: i === 19 ? ['NO'] : [`X${i}`, `Y${i}`], caseInsensitive: false, inverted: false }],
        parameters: { rollout: '100', stickiness: 'default', groupId: flagKey },
      });
    }
    await call('POST', `${base}/on`);
    const request = {
      url: `${url}/api/frontend`,
      method: 'POST' as const,
      headers: { authorization: FRONTEND_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ context: { userId: 'user-42', properties: { country: 'NO', email: 'u@example.com' } } }),
    };
    // The frontend API serves from a cache refreshed in the background: wait until the toggle is in it.
    await waitFor(
      async () => {
        const res = await http(request.url, { method: 'POST', headers: request.headers, body: request.body });
        return res.status === 200 && (res.body as { toggles?: Array<{ name: string; enabled: boolean }> }).toggles?.some((t) => t.name === flagKey && t.enabled) === true;
      },
      30_000,
      250,
    );
    const miss = await http(request.url, { method: 'POST', headers: request.headers, body: JSON.stringify({ context: { userId: 'user-42', properties: { country: 'SE' } } }) });
    if ((miss.body as { toggles?: Array<{ name: string }> }).toggles?.some((t) => t.name === flagKey)) throw new Error('unleash: the toggle is on for a country no strategy names');
    return { url, request, database, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
