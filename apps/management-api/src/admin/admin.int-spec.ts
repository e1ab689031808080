import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { waitFor } from '@flagship/testing';
import { ManagementApiFixture, PLATFORM_ADMIN, type SignedUp } from '../testing/management-api.fixture';

describe('admin endpoints (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let root: SignedUp;
  let user: SignedUp;

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    root = await f.signUp(PLATFORM_ADMIN);
    user = await f.signUp('plain@flagship.test');
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('refuses everyone but platform admins, tenant admins included', async () => {
    for (const [method, path, json] of [
      ['GET', '/admin/users', undefined],
      ['POST', `/admin/tenants/${user.tenantId}/entitlements`, { productKey: 'core', tier: 'enterprise' }],
      ['POST', `/admin/tenants/${user.tenantId}/credits`, { amount: 5, reason: 'x' }],
      ['PATCH', `/admin/tenants/${user.tenantId}`, { zeroRated: true }],
    ] as const) {
      const res = await f.call(method, path, { token: user.idToken, json });
      expect([path, res.status, res.body.type]).toEqual([path, 403, '/problems/platform-admin-required']);
    }
    expect((await f.call('GET', '/admin/users')).status).toBe(401);
  });

  it('lists users, paginated', async () => {
    const res = await f.call('GET', '/admin/users?limit=1', { token: root.idToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([expect.objectContaining({ id: expect.any(String), email: expect.any(String), pending: false })]);
    expect(res.headers.get('link')).toMatch(/rel="next"/);
    const all = await f.call('GET', '/admin/users', { token: root.idToken });
    expect(all.body.map((u: { email: string }) => u.email)).toEqual(expect.arrayContaining([PLATFORM_ADMIN, 'plain@flagship.test']));
  });

  it('grants entitlements for known product keys only', async () => {
    const ok = await f.call('POST', `/admin/tenants/${user.tenantId}/entitlements`, {
      token: root.idToken,
      json: { productKey: 'insights', tier: 'enterprise_plus_suite', validUntil: '2099-01-01T00:00:00Z' },
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ tenantId: user.tenantId, productKey: 'insights', tier: 'enterprise_plus_suite', validUntil: '2099-01-01T00:00:00.000Z' });
    const again = await f.call('POST', `/admin/tenants/${user.tenantId}/entitlements`, { token: root.idToken, json: { productKey: 'insights', tier: 'enterprise' } });
    expect([again.status, again.body.tier, again.body.validUntil]).toEqual([201, 'enterprise', null]);
    const legacy = await f.call('POST', `/admin/tenants/${user.tenantId}/entitlements`, { token: root.idToken, json: { productKey: 'partner_portal', tier: 'enterprise' } });
    expect([legacy.status, Object.keys(legacy.body.errors)]).toEqual([422, ['productKey']]);
    const unknown = await f.call('POST', `/admin/tenants/${user.tenantId}/entitlements`, { token: root.idToken, json: { productKey: 'nope', tier: 'gold' } });
    expect(Object.keys(unknown.body.errors).sort()).toEqual(['tier']);
    const past = await f.call('POST', `/admin/tenants/${user.tenantId}/entitlements`, { token: root.idToken, json: { productKey: 'core', tier: 'enterprise', validUntil: '2001-01-01T00:00:00Z' } });
    expect([past.status, past.body.errors]).toEqual([422, { validUntil: 'must be in the future' }]);
    const ghost = await f.call('POST', '/admin/tenants/00000000-0000-4000-8000-000000000000/entitlements', { token: root.idToken, json: { productKey: 'core', tier: 'enterprise' } });
    expect(ghost.status).toBe(404);
  });

  it('adds credits and keeps a running balance', async () => {
    const first = await f.call('POST', `/admin/tenants/${user.tenantId}/credits`, { token: root.idToken, json: { amount: 1_000_000, reason: 'pilot' } });
    expect([first.status, first.body]).toEqual([201, { tenantId: user.tenantId, balance: 1_000_000, reserved: 0 }]);
    const second = await f.call('POST', `/admin/tenants/${user.tenantId}/credits`, { token: root.idToken, json: { amount: -250_000, reason: 'correction' } });
    expect(second.body.balance).toBe(750_000);
    for (const bad of [{ amount: 0, reason: 'x' }, { amount: 1.5, reason: 'x' }, { amount: '5', reason: 'x' }, { amount: 5 }]) {
      expect((await f.call('POST', `/admin/tenants/${user.tenantId}/credits`, { token: root.idToken, json: bad })).status).toBe(422);
    }
    expect((await f.call('POST', '/admin/tenants/not-a-tenant/credits', { token: root.idToken, json: { amount: 5, reason: 'x' } })).status).toBe(404);
  });

  it('switches zero-rating and the hosted provider per tenant', async () => {
    const res = await f.call('PATCH', `/admin/tenants/${user.tenantId}`, { token: root.idToken, json: { zeroRated: true, hostedProviderAllowed: true } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.tenantId, zeroRated: true, hostedProviderAllowed: true });
    const partial = await f.call('PATCH', `/admin/tenants/${user.tenantId}`, { token: root.idToken, json: { zeroRated: false } });
    expect(partial.body).toMatchObject({ zeroRated: false, hostedProviderAllowed: true });
    expect((await f.call('PATCH', `/admin/tenants/${user.tenantId}`, { token: root.idToken, json: { zeroRated: 'no' } })).status).toBe(422);
    expect((await f.call('PATCH', `/admin/tenants/${user.tenantId}`, { token: root.idToken, json: { plan: 'premium' } })).status).toBe(422);
  });

  it("announces every change the AI gateway caches on the tenant-changed channel", async () => {
    const heard: unknown[] = [];
    const unsubscribe = await f.svc.app.get<PubSub>(PUBSUB).subscribe(CHANNELS.tenantChanged, (m) => heard.push(m));
    try {
      await f.call('POST', `/admin/tenants/${user.tenantId}/entitlements`, { token: root.idToken, json: { productKey: 'forms', tier: 'enterprise' } });
      await f.call('POST', `/admin/tenants/${user.tenantId}/credits`, { token: root.idToken, json: { amount: 5, reason: 'x' } });
      await f.call('PATCH', `/admin/tenants/${user.tenantId}`, { token: root.idToken, json: { hostedProviderAllowed: false } });
      // A refused change announces nothing.
      await f.call('POST', `/admin/tenants/${user.tenantId}/credits`, { token: root.idToken, json: { amount: 0, reason: 'x' } });
      await waitFor(async () => heard.length >= 3 || undefined, 3000);
      await new Promise((r) => setTimeout(r, 100));
      expect(heard).toEqual([{ tenantId: user.tenantId }, { tenantId: user.tenantId }, { tenantId: user.tenantId }]);
    } finally {
      await unsubscribe();
    }
  });
});
