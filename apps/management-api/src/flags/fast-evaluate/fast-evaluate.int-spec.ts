import { DataSource } from 'typeorm';
import { bootstrapService, type RunningApp } from '@flagship/service-kit';
import { freePort, http, TcpProxy, waitFor } from '@flagship/testing';
import { AppModule } from '../../app.module';
import { configureManagementApi } from '../../configure';
import { loadManagementApiConfig } from '../../env.schema';
import { ManagementApiFixture, type SignedUp } from '../../testing/management-api.fixture';

/** Another replica of management-api on the same Postgres database and Redis prefix (its own pools, caches and subscriber). */
async function replica(env: NodeJS.ProcessEnv): Promise<RunningApp> {
  const port = await freePort();
  const config = loadManagementApiConfig({ ...env, PORT: String(port) });
  const app = await bootstrapService(AppModule.forConfig(config), { port, host: '127.0.0.1', handleSignals: false, configure: configureManagementApi });
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

describe('evaluations from memory across replicas (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let other: RunningApp;
  let owner: SignedUp;
  let db: DataSource;

  const evaluate = (url: string, u: SignedUp, key: string, tenant = u.tenantId) =>
    http(`${url}/api/flags/${key}/evaluate`, { method: 'POST', headers: { authorization: `Bearer ${u.idToken}`, 'x-tenant-id': tenant }, json: { userId: 'u-1', attributes: { country: 'NO' } } });

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    other = await replica(f.te.env);
    owner = await f.signUp();
    db = new DataSource({ type: 'postgres', url: f.te.env['DATABASE_URL'] });
    await db.initialize();
  });
  afterAll(async () => {
    await db?.destroy();
    await other?.close();
    await f?.stop();
  });

  it('a PATCH is seen at once on the replica that wrote it and within 100 ms on another', async () => {
    const created = await f.call('POST', '/api/flags', { token: owner.idToken, tenant: owner.tenantId, json: { key: 'replicated', name: 'r', type: 'boolean', defaultValue: false, enabled: true } });
    expect(created.status).toBe(201);
    // Both replicas hold the set now.
    expect((await evaluate(f.url, owner, 'replicated')).body).toMatchObject({ enabled: true, reason: 'FALLTHROUGH' });
    expect((await evaluate(other.url, owner, 'replicated')).body).toMatchObject({ enabled: true, reason: 'FALLTHROUGH' });

    const patched = await f.call('PATCH', '/api/flags/replicated', { token: owner.idToken, tenant: owner.tenantId, json: { enabled: false } });
    expect(patched.status).toBe(200);
    const patchedAt = performance.now();
    // The writer: the very next evaluation.
    expect((await evaluate(f.url, owner, 'replicated')).body).toMatchObject({ enabled: false, reason: 'OFF' });
    // The other replica: polled until it answers the change.
    let seenAfterMs = Infinity;
    while (performance.now() - patchedAt < 1000) {
      const res = await evaluate(other.url, owner, 'replicated');
      expect(res.status).toBe(200);
      if (res.body.reason === 'OFF') {
        seenAfterMs = performance.now() - patchedAt;
        break;
      }
    }
    expect(seenAfterMs).toBeLessThan(100);
  });

  it('answers both routes with the RateLimit headers, the request id and Nest\'s problems', async () => {
    const ok = await evaluate(other.url, owner, 'replicated');
    expect(ok.headers.get('ratelimit-limit')).toMatch(/^\d+$/);
    expect(ok.headers.get('x-request-id')).toBeTruthy();
    const missing = await evaluate(other.url, owner, 'no-such-flag');
    expect([missing.status, missing.body.type, missing.body.instance]).toEqual([404, '/problems/flag-not-found', missing.headers.get('x-request-id')]);
    expect(missing.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
    const unknownField = await http(`${other.url}/api/flags/replicated/evaluate`, { method: 'POST', headers: { authorization: `Bearer ${owner.idToken}` }, json: { user: 'x' } });
    expect([unknownField.status, unknownField.body.errors]).toEqual([422, { user: 'is not an allowed field' }]);
    const malformed = await http(`${other.url}/api/flags/replicated/evaluate`, { method: 'POST', headers: { authorization: `Bearer ${owner.idToken}`, 'content-type': 'application/json' }, body: '{"userId":' });
    expect([malformed.status, malformed.body.type]).toEqual([400, '/problems/malformed-json']);
    const anonymous = await http(`${other.url}/api/flags/replicated/evaluate`, { method: 'POST', json: {} });
    expect([anonymous.status, anonymous.body.type]).toEqual([401, '/problems/invalid-token']);
    const wrongProject = await http(`${other.url}/api/flags/projects/00000000-0000-4000-8000-000000000000/flags/replicated/evaluate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.idToken}` },
      json: { key: 'u-1' },
    });
    expect([wrongProject.status, wrongProject.body.type]).toEqual([404, '/problems/flag-not-found']);
  });

  it('refuses a member removed from the tenant within 5 s on every replica', async () => {
    const email = `member-${Date.now()}@flagship.test`;
    expect((await f.call('POST', `/api/tenants/${owner.tenantId}/users`, { token: owner.idToken, json: { email, role: 'viewer' } })).status).toBe(201);
    const member = { ...(await f.signUp(email)), tenantId: owner.tenantId };
    // Both replicas have the member's access cached.
    for (const url of [f.url, other.url]) expect((await evaluate(url, member, 'replicated')).status).toBe(200);

    await db.query('DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2', [owner.tenantId, member.userId]);
    const removedAt = performance.now();
    for (const url of [f.url, other.url]) {
      await waitFor(async () => (await evaluate(url, member, 'replicated')).status === 403, 5000, 50);
    }
    expect(performance.now() - removedAt).toBeLessThan(5000);
    expect((await evaluate(other.url, member, 'replicated')).body.type).toBe('/problems/tenant-access-denied');
  });

  it('with Redis down, keeps evaluating from the last known flags and /readyz says Redis is down', async () => {
    const proxy = await TcpProxy.start(f.te.env['REDIS_URL']!);
    const cut = await replica({ ...f.te.env, REDIS_URL: proxy.rewrite(f.te.env['REDIS_URL']!) });
    try {
      await f.call('POST', '/api/flags', { token: owner.idToken, tenant: owner.tenantId, json: { key: 'outage', name: 'o', type: 'boolean', defaultValue: false } });
      expect((await evaluate(cut.url, owner, 'outage')).body).toMatchObject({ reason: 'OFF' });
      await proxy.cut();
      const started = performance.now();
      // Longer than the caller cache, so the caller is resolved again during the outage too.
      while (performance.now() - started < 3000) {
        const res = await evaluate(cut.url, owner, 'outage');
        expect([res.status, res.body.reason]).toEqual([200, 'OFF']);
        await new Promise((r) => setTimeout(r, 100));
      }
      const ready = await http(`${cut.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.detail).toMatch(/redis/i);
      // Back: ready again (the app closes cleanly only with Redis reachable).
      await proxy.restore();
      await waitFor(async () => (await http(`${cut.url}/readyz`)).status === 200, 10_000, 100);
      expect((await evaluate(cut.url, owner, 'outage')).status).toBe(200);
    } finally {
      await proxy.restore();
      await cut.close();
      await proxy.stop();
    }
  }, 30_000);
});
