/**
 * The built management-api, started as `npm start` and the images start it, with the embedded dev
 * identity provider: refused at start-up, in one line, when it would listen beyond loopback.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createTestEnvironment, freePort, http, killOnExit, type TestEnvironment, waitFor } from '@flagship/testing';

const MAIN = join(__dirname, '../../../../dist/apps/management-api/apps/management-api/src/main.js');

describe('management-api with IDP_MODE=dev and its listen address (the built app)', () => {
  let te: TestEnvironment;

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build management-api first`);
    te = await createTestEnvironment();
  });
  afterAll(async () => {
    await te?.teardown();
  });

  const run = async (env: NodeJS.ProcessEnv) => {
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN], {
      env: { ...te.env, NODE_ENV: 'development', IDP_MODE: 'dev', PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    killOnExit(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c) => (stdout += c));
    child.stderr!.on('data', (c) => (stderr += c));
    return { child, port, out: () => ({ stdout, stderr }), exited: once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]> };
  };

  it.each(['0.0.0.0', '::'])('HOST=%s (every interface) with a loopback PUBLIC_BASE_URL: exits 1 before listening, saying why in one line', async (host) => {
    const p = await run({ HOST: host });
    const [code] = await Promise.race([p.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still running: ${JSON.stringify(p.out())}`)), 20_000))]);
    expect(code).toBe(1);
    expect(p.out().stderr).toBe(
      `invalid configuration: IDP_MODE=dev (the embedded identity provider) is refused while HOST=${host} listens beyond loopback; set HOST=127.0.0.1, use IDP_MODE=oidc, or IDP_DEV_ALLOW_NON_LOOPBACK_HOST=true where only this machine reaches the port (a container published on 127.0.0.1)\n`,
    );
    expect(p.out().stdout).toBe('');
    expect((await http(`http://127.0.0.1:${p.port}/healthz`).catch(() => ({ status: 0 }))).status).toBe(0);
  });

  it('HOST=127.0.0.1: starts and serves the dev identity provider', async () => {
    const p = await run({ HOST: '127.0.0.1' });
    try {
      await waitFor(async () => (await http(`http://127.0.0.1:${p.port}/healthz`).catch(() => ({ status: 0 }))).status === 200, 30_000, 100);
      const jwks = await http<{ keys: unknown[] }>(`http://127.0.0.1:${p.port}/dev/idp/.well-known/jwks.json`);
      expect([jwks.status, jwks.body.keys.length > 0]).toEqual([200, true]);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });
});
