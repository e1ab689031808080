import { http } from '@flagship/testing';
import { ManagementApiFixture, PLATFORM_ADMIN, type SignedUp } from '../testing/management-api.fixture';

describe('OAuth clients API and client tokens on the management API (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let admin: SignedUp;
  let other: SignedUp;

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    admin = await f.signUp();
    other = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  const newClient = (json: unknown, u = admin, tenant = u.tenantId) => f.call('POST', '/api/oauth/clients', { token: u.idToken, tenant, json });
  const tokenFor = async (clientId: string, clientSecret: string, scope?: string) => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, ...(scope ? { scope } : {}) });
    const res = await http(`${f.url}/oauth/token`, { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    return res;
  };

  it('creates a client with its secret shown once, lists without secrets, rotates and deletes', async () => {
    const created = await newClient({ name: 'backend', scopes: ['flags:read', 'flags:evaluate'] });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(created.body).toMatchObject({ clientId: expect.stringMatching(/^ffc_/), clientSecret: expect.stringMatching(/^ffs_/), name: 'backend', scopes: ['flags:read', 'flags:evaluate'], productKeys: [] });
    const list = await f.call('GET', '/api/oauth/clients', { token: admin.idToken, tenant: admin.tenantId });
    expect(list.body).toHaveLength(1);
    expect(list.text).not.toContain(created.body.clientSecret);
    expect(list.body[0].clientSecret).toBeUndefined();
    const rotated = await f.call('POST', `/api/oauth/clients/${created.body.clientId}/rotate-secret`, { token: admin.idToken, tenant: admin.tenantId });
    expect(rotated.status).toBe(200);
    expect(rotated.body.clientSecret).not.toBe(created.body.clientSecret);
    expect((await tokenFor(created.body.clientId, created.body.clientSecret)).status).toBe(401);
    expect((await tokenFor(created.body.clientId, rotated.body.clientSecret)).status).toBe(200);
    expect((await f.call('DELETE', `/api/oauth/clients/${created.body.clientId}`, { token: admin.idToken, tenant: admin.tenantId })).status).toBe(204);
    expect((await f.call('DELETE', `/api/oauth/clients/${created.body.clientId}`, { token: admin.idToken, tenant: admin.tenantId })).status).toBe(404);
  });

  it('validates scopes and product keys; internal suite keys are for platform admins only', async () => {
    const badScope = await newClient({ name: 'x', scopes: ['flags:*'] });
    expect([badScope.status, Object.keys(badScope.body.errors)]).toEqual([422, ['scopes']]);
    const legacy = await newClient({ name: 'x', scopes: ['flags:read'], productKeys: ['partner_portal'] });
    expect([legacy.status, Object.keys(legacy.body.errors)]).toEqual([422, ['productKeys']]);
    expect((await newClient({ name: 'x', scopes: 'flags:read' })).status).toBe(422);
    // A client needs at least one scope: one with none could only ever have called the gateway.
    const none = await newClient({ name: 'x', scopes: [] });
    expect([none.status, none.headers.get('content-type')?.split(';')[0], Object.keys(none.body.errors)]).toEqual([422, 'application/problem+json', ['scopes']]);
    expect(none.body.errors.scopes).toContain('at least one');
    const gateway = await newClient({ name: 'gateway', scopes: ['ai:invoke'] });
    expect([gateway.status, gateway.body.scopes]).toEqual([201, ['ai:invoke']]);
    const token = await tokenFor(gateway.body.clientId, gateway.body.clientSecret);
    expect([token.status, token.body.scope]).toEqual([200, 'ai:invoke']);
    expect((await newClient({ scopes: ['flags:read'] })).status).toBe(422);
    expect((await newClient({ name: 'x', scopes: ['flags:read'], secret: 'mine' })).status).toBe(422);
    const internal = await newClient({ name: 'suite', scopes: ['flags:read'], productKeys: ['insights'] });
    expect(internal.status).toBe(403);
    expect((await newClient({ name: 'own', scopes: ['flags:read'], productKeys: ['core'] })).status).toBe(201);
    const root = await f.signUp(PLATFORM_ADMIN);
    const byRoot = await newClient({ name: 'suite', scopes: ['flags:read'], productKeys: ['insights', 'core'] }, root);
    expect([byRoot.status, byRoot.body.productKeys]).toEqual([201, ['insights', 'core']]);
  });

  it('only tenant admins manage clients, and only their own tenant\'s', async () => {
    const editor = await f.addMember(admin, admin.tenantId, 'ed-oauth@flagship.test', 'editor');
    const denied = await newClient({ name: 'x', scopes: ['flags:read'] }, editor, admin.tenantId);
    expect([denied.status, denied.body.type]).toEqual([403, '/problems/role-required']);
    expect((await f.call('GET', '/api/oauth/clients', { token: editor.idToken, tenant: admin.tenantId })).status).toBe(403);
    expect((await newClient({ name: 'x', scopes: ['flags:read'] }, other, admin.tenantId)).status).toBe(403);
    const mine = await newClient({ name: 'mine', scopes: ['flags:read'] });
    expect((await f.call('DELETE', `/api/oauth/clients/${mine.body.clientId}`, { token: other.idToken, tenant: other.tenantId })).status).toBe(404);
    expect((await f.call('POST', '/api/oauth/clients', { token: admin.idToken, json: { name: 'x', scopes: ['flags:read'] } })).status).toBe(400);
  });

  it('client tokens act in their tenant with their scopes only', async () => {
    await f.call('POST', '/api/flags', { token: admin.idToken, tenant: admin.tenantId, json: { key: 'm2m', name: 'm2m', type: 'boolean', defaultValue: true, enabled: true } });
    const client = (await newClient({ name: 'reader', scopes: ['flags:read', 'flags:evaluate'] })).body;
    const tok = await tokenFor(client.clientId, client.clientSecret, 'flags:read flags:evaluate');
    expect(tok.status).toBe(200);
    const bearer = { authorization: `Bearer ${tok.body.access_token}` };
    const list = await http(`${f.url}/api/flags`, { headers: bearer });
    expect([list.status, list.body.map((x: { key: string }) => x.key)]).toEqual([200, ['m2m']]);
    const ev = await http(`${f.url}/api/flags/m2m/evaluate`, { method: 'POST', headers: bearer, json: { userId: 'svc' } });
    expect([ev.status, ev.body.value]).toEqual([200, true]);
    const write = await http(`${f.url}/api/flags`, { method: 'POST', headers: bearer, json: { key: 'nope', name: 'n', type: 'boolean', defaultValue: true } });
    expect([write.status, write.body.type]).toEqual([403, '/problems/insufficient-scope']);
    expect((await http(`${f.url}/api/projects`, { headers: bearer })).status).toBe(403);
    expect((await http(`${f.url}/api/flags`, { headers: { ...bearer, 'x-tenant-id': other.tenantId } })).status).toBe(403);
    expect((await http(`${f.url}/api/tenants`, { headers: bearer })).body.map((t: { id: string }) => t.id)).toEqual([admin.tenantId]);
    expect((await http(`${f.url}/api/oauth/clients`, { headers: bearer })).status).toBe(403);
    expect((await http(`${f.url}/v1/users/me/product-tours/intro`, { headers: bearer })).status).toBe(403);
    const narrow = await tokenFor(client.clientId, client.clientSecret, 'flags:read');
    const narrowEval = await http(`${f.url}/api/flags/m2m/evaluate`, { method: 'POST', headers: { authorization: `Bearer ${narrow.body.access_token}` }, json: { userId: 'svc' } });
    expect(narrowEval.status).toBe(403);
    expect((await tokenFor(client.clientId, client.clientSecret, 'flags:write')).body.error).toBe('invalid_scope');
  });
});
