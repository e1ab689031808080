/**
 * Two management-api processes (the built app, as `npm start` runs it) on one database and one
 * Redis share one rate-limit budget: the limit holds across replicas.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createTestEnvironment, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';

const MAIN = join(__dirname, '../../../dist/apps/management-api/apps/management-api/src/main.js');

describe('rate limits shared by two management-api processes', () => {
  let te: TestEnvironment;
  const procs: ChildProcess[] = [];
  const urls: string[] = [];

  beforeAll(async () => {
    te = await createTestEnvironment();
    const issuerPort = await freePort();
    for (let i = 0; i < 2; i++) {
      const port = i === 0 ? issuerPort : await freePort();
      const child = spawn(process.execPath, [MAIN], {
        env: {
          ...te.env,
          NODE_ENV: 'development',
          IDP_MODE: 'dev',
          PORT: String(port),
          // Both replicas stand behind one public address: the dev IdP issuer is the same.
          PUBLIC_BASE_URL: `http://127.0.0.1:${issuerPort}`,
          RATE_LIMIT_FREE: '8',
          RATE_LIMIT_IP_PER_MINUTE: '1000',
        },
        stdio: 'ignore',
      });
      procs.push(child);
      urls.push(`http://127.0.0.1:${port}`);
      await waitFor(async () => (await http(`http://127.0.0.1:${port}/healthz`)).status === 200, 20000, 100);
    }
  });

  afterAll(async () => {
    for (const p of procs) {
      p.kill('SIGTERM');
      if (p.exitCode === null) await once(p, 'exit');
    }
    await te?.teardown();
  });

  it('refuses the 9th request of a free tenant, whichever process gets it', async () => {
    const email = 'limited@flagship.test';
    const { idToken } = (await http(`${urls[0]}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'long-enough-1' } })).body;
    const signup = await http(`${urls[1]}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: 'long-enough-1' } });
    expect(signup.status).toBe(201);
    const headers = { authorization: `Bearer ${idToken}`, 'x-tenant-id': signup.body.data.canonical_tenant_id };
    const seen: Array<[number, string | null, string | null]> = [];
    for (let i = 0; i < 8; i++) {
      const r = await http(`${urls[i % 2]}/api/projects`, { headers });
      seen.push([r.status, r.headers.get('ratelimit-limit'), r.headers.get('ratelimit-remaining')]);
    }
    expect(seen.map((s) => s[0])).toEqual(Array(8).fill(200));
    expect(seen.map((s) => s[1])).toEqual(Array(8).fill('8'));
    expect(seen.map((s) => Number(s[2]))).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
    for (const url of urls) {
      const over = await http(`${url}/api/projects`, { headers });
      expect(over.status).toBe(429);
      expect(over.headers.get('content-type')).toMatch(/problem\+json/);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(over.body.type).toBe('/problems/rate-limited');
    }
  });
});
