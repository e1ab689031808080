import Redis from 'ioredis';
import { http } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * Gateway bindings through the real app (HTTP, Postgres, Redis): the roles (admins write, viewers
 * and `flags:read` clients read), ETag and If-Match, problem+json refusals, the announcement a
 * gateway follows, and another tenant seeing nothing.
 */
describe('gateway bindings (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let viewer: SignedUp;
  let stranger: SignedUp;
  /** A viewer acts in the owner's tenant (its own tenant is another). */
  const as = (u: SignedUp, headers: Record<string, string> = {}) => ({ token: u.idToken, tenant: u === viewer ? owner.tenantId : u.tenantId, headers });
  const put = (json: unknown, u = owner, headers: Record<string, string> = {}) => f.call('PUT', '/api/gateway/bindings/core', { ...as(u, headers), json });

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ QUOTA_GATEWAY_BINDINGS_PER_TENANT: '1' });
    owner = await f.signUp();
    viewer = await f.signUp();
    stranger = await f.signUp();
    await f.addMember(owner, owner.tenantId, viewer.email, 'viewer', viewer);
    const created = await f.call('POST', '/api/flags', {
      ...as(owner),
      json: {
        key: 'model-rollout',
        name: 'Model rollout',
        type: 'json',
        defaultValue: { model: 'fake-chat-1' },
        flag_variations: [
          { name: 'control', value: { model: 'fake-chat-1' } },
          { name: 'treatment', value: { model: 'gpt-4o-mini', params: { temperature: 0.2 } } },
        ],
      },
    });
    expect(created.status).toBe(201);
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('an admin binds a product key (ETag "1", announced on gateway-binding-changed); viewers and flags:read clients read it; the list has it', async () => {
    const sub = new Redis(f.te.env['REDIS_URL']!);
    const heard: string[] = [];
    await sub.subscribe(`${f.te.env['REDIS_KEY_PREFIX'] ?? ''}ch:gateway-binding-changed`);
    sub.on('message', (_channel, message: string) => heard.push(message));
    const res = await put({ flagKey: 'model-rollout' });
    expect([res.status, res.headers.get('etag'), res.body]).toEqual([
      200,
      '"1"',
      { productKey: 'core', flagKey: 'model-rollout', modelAlias: null, environment: 'production', rolloutPlan: null, spendCaps: null, version: 1, createdAt: expect.any(String), updatedAt: expect.any(String) },
    ]);
    await new Promise((r) => setTimeout(r, 200));
    expect(heard.map((m) => JSON.parse(m))).toEqual([{ tenantId: owner.tenantId, productKey: 'core' }]);
    await sub.quit();
    expect((await f.call('GET', '/api/gateway/bindings/core', as(viewer))).body.flagKey).toBe('model-rollout');
    expect((await f.call('GET', '/api/gateway/bindings', as(viewer))).body.map((b: { productKey: string }) => b.productKey)).toEqual(['core']);
    const client = await f.call('POST', '/api/oauth/clients', { ...as(owner), json: { name: 'reader', scopes: ['flags:read'], productKeys: ['core'] } });
    const token = await http<any>(`${f.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.body.clientId, client_secret: client.body.clientSecret }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    const bearer = { authorization: `Bearer ${token.body.access_token}` };
    expect((await http<any>(`${f.url}/api/gateway/bindings/core`, { headers: bearer })).status).toBe(200);
    expect((await http<any>(`${f.url}/api/gateway/bindings/core`, { method: 'PUT', json: { flagKey: 'model-rollout' }, headers: bearer })).status).toBe(403);
  });

  it('refuses writes by a viewer (403) and stale If-Match (412, problem+json); a stranger sees no binding (404)', async () => {
    expect((await put({ flagKey: 'model-rollout' }, viewer)).status).toBe(403);
    expect((await f.call('DELETE', '/api/gateway/bindings/core', as(viewer))).status).toBe(403);
    const stale = await put({ flagKey: 'model-rollout', modelAlias: 'fake-chat-1' }, owner, { 'if-match': '"9"' });
    expect([stale.status, stale.headers.get('content-type'), stale.body.type, stale.body.currentVersion]).toEqual([412, expect.stringContaining('application/problem+json'), '/problems/gateway-binding-changed', '"1"']);
    expect((await f.call('GET', '/api/gateway/bindings/core', as(stranger))).status).toBe(404);
    expect((await f.call('GET', '/api/gateway/bindings', as(stranger))).body).toEqual([]);
  });

  it('validates the body (422 naming the field) and holds the quota (409)', async () => {
    const bad = await put({ flagKey: 'model-rollout', rolloutPlan: { stages: [{ percent: 120 }], guards: {} }, spendCaps: { ghost: 5 } });
    expect(bad.status).toBe(422);
    const missing = await put({ flagKey: 'no-such-flag' });
    expect([missing.status, missing.body.errors]).toEqual([422, { flagKey: 'no flag no-such-flag in environment production' }]);
    const stages = Array.from({ length: 11 }, (_, i) => ({ percent: i }));
    for (const json of [{ flagKey: 'model-rollout', rolloutPlan: { stages, guards: {} } }, { flagKey: 'model-rollout', modelAlias: 'a\u0000b' }, { flagKey: 'model-rollout', spendCaps: { 'a\u0000b': 1 } }, { flagKey: 'model-rollout', spendCaps: { x: 1.5 } }]) {
      expect((await put(json)).status).toBe(422);
    }
    const over = await f.call('PUT', '/api/gateway/bindings/insights', { ...as(owner), json: { flagKey: 'model-rollout' } });
    expect([over.status, over.body.quota]).toEqual([409, 'gateway-bindings-per-tenant']);
  });

  it('replaces with the current ETag (version 2, audited), then unbinds (204, then 404)', async () => {
    const ok = await put({ flagKey: 'model-rollout', modelAlias: 'fake-chat-1', rolloutPlan: { stages: [{ percent: 5, minRequests: 100 }, { percent: 100 }], guards: { errorRate: 0.02 } } }, owner, { 'if-match': '"1"' });
    expect([ok.status, ok.headers.get('etag'), ok.body.modelAlias]).toEqual([200, '"2"', 'fake-chat-1']);
    expect((await f.call('DELETE', '/api/gateway/bindings/core', as(owner, { 'if-match': '"2"' }))).status).toBe(204);
    expect((await f.call('DELETE', '/api/gateway/bindings/core', as(owner))).status).toBe(404);
    const audit = await f.call('GET', '/api/gateway/bindings/core/audit', as(owner));
    expect(audit.body.map((a: { action: string; actor: string }) => [a.action, a.actor])).toEqual([
      ['create', `user:${owner.userId}`],
      ['update', `user:${owner.userId}`],
      ['delete', `user:${owner.userId}`],
    ]);
  });
});
