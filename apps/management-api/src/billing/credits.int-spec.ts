import { http } from '@flagship/testing';
import type { ManagementApiFixture, SignedUp } from '../testing/management-api.fixture';
import { startBillingCast } from './billing-cast.fixture';

describe('GET /api/billing/credits (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let root: SignedUp;
  let ada: SignedUp;
  let viewer: SignedUp;
  let stranger: SignedUp;

  beforeAll(async () => {
    ({ f, root, ada, viewer, stranger } = await startBillingCast());
  });
  afterAll(async () => {
    await f?.stop();
  });

  const credits = (u: SignedUp, tenant = ada.tenantId) => f.call('GET', '/api/billing/credits', { token: u.idToken, tenant });

  it('is zeros for a tenant never granted credits', async () => {
    const res = await credits(ada);
    expect([res.status, res.body]).toEqual([200, { balance: 0, reserved: 0 }]);
  });

  it('shows admin grants and the reservation held by requests in flight, to every member', async () => {
    expect((await f.call('POST', `/admin/tenants/${ada.tenantId}/credits`, { token: root.idToken, json: { amount: 5_000_000, reason: 'pilot' } })).status).toBe(201);
    // What the gateway does before calling a provider: hold an estimate on the balance.
    await f.sql('UPDATE credit_balances SET reserved = reserved + 1234 WHERE tenant_id = $1', [ada.tenantId]);
    expect((await credits(ada)).body).toEqual({ balance: 5_000_000, reserved: 1234 });
    expect((await credits(viewer)).body).toEqual({ balance: 5_000_000, reserved: 1234 });
    // Without X-Tenant-ID the caller's canonical tenant: the viewer's own, still empty.
    expect((await f.call('GET', '/api/billing/credits', { token: viewer.idToken })).body).toEqual({ balance: 0, reserved: 0 });
  });

  it('refuses foreign tenants, anonymous callers and client tokens', async () => {
    const foreign = await credits(stranger);
    expect([foreign.status, foreign.body.type]).toEqual([403, '/problems/tenant-access-denied']);
    expect((await f.call('GET', '/api/billing/credits', { tenant: ada.tenantId })).status).toBe(401);
    const client = await f.call('POST', '/api/oauth/clients', { token: ada.idToken, tenant: ada.tenantId, json: { name: 'backend', scopes: ['flags:read', 'projects:read'] } });
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.body.clientId, client_secret: client.body.clientSecret });
    const token = await http(`${f.url}/oauth/token`, { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const res = await f.call('GET', '/api/billing/credits', { token: token.body.access_token });
    expect([res.status, res.body.type]).toEqual([403, '/problems/users-only']);
  });
});
