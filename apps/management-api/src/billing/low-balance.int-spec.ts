import type { ManagementApiFixture, SignedUp } from '../testing/management-api.fixture';
import { startBillingCast } from './billing-cast.fixture';

describe('/api/billing/low-balance-alert (real HTTP, Postgres, Redis)', () => {
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

  const path = '/api/billing/low-balance-alert';
  const put = (u: SignedUp, json: unknown, tenant = ada.tenantId) => f.call('PUT', path, { token: u.idToken, tenant, json });
  const grant = (amount: number) => f.call('POST', `/admin/tenants/${ada.tenantId}/credits`, { token: root.idToken, json: { amount, reason: 'top-up' } });

  /** What the gateway's settlement does when it debits (SETTLE's crossing CTEs are exercised in libs/ledger). */
  async function crossNow(balance: number): Promise<void> {
    await f.sql('UPDATE credit_balances SET balance = $2 WHERE tenant_id = $1', [ada.tenantId, balance]);
    await f.sql(
      `WITH c AS (UPDATE low_balance_alerts SET armed = false WHERE tenant_id = $1 AND armed RETURNING tenant_id, threshold)
       INSERT INTO low_balance_crossings (tenant_id, threshold, balance) SELECT tenant_id, threshold, $2 FROM c`,
      [ada.tenantId, balance],
    );
  }

  it('is unset at first, then set, armed while the balance is above it, and below once it falls', async () => {
    expect((await f.call('GET', path, { token: ada.idToken, tenant: ada.tenantId })).body).toEqual({ threshold: null, armed: false, below: false, balance: 0 });
    expect((await grant(1_000_000)).status).toBe(201);
    const set = await put(ada, { threshold: 200_000 });
    expect([set.status, set.body]).toEqual([200, { threshold: 200_000, armed: true, below: false, balance: 1_000_000 }]);
    await crossNow(150_000);
    expect((await f.call('GET', path, { token: ada.idToken, tenant: ada.tenantId })).body).toEqual({ threshold: 200_000, armed: false, below: true, balance: 150_000 });
    const crossings = await f.call('GET', `${path}/crossings`, { token: ada.idToken, tenant: ada.tenantId });
    expect(crossings.status).toBe(200);
    expect(crossings.body).toEqual([{ id: expect.any(String), threshold: 200_000, balance: 150_000, crossedAt: expect.stringMatching(/Z$/) }]);
    // A grant above the threshold re-arms it (the admin route and Stripe's both go through CreditsRepository.grantCredits).
    await grant(100_000);
    expect((await f.call('GET', path, { token: ada.idToken, tenant: ada.tenantId })).body).toMatchObject({ armed: true, below: false, balance: 250_000 });
  });

  it('lists crossings newest first, paginated with Link rel="next"', async () => {
    await crossNow(100_000);
    await grant(500_000);
    await crossNow(50_000);
    const first = await f.call('GET', `${path}/crossings?limit=2`, { token: ada.idToken, tenant: ada.tenantId });
    expect(first.body.map((c: { balance: number }) => c.balance)).toEqual([50_000, 100_000]);
    const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.get('link')))![1]!;
    const second = await f.call('GET', next, { token: ada.idToken, tenant: ada.tenantId });
    expect(second.body.map((c: { balance: number }) => c.balance)).toEqual([150_000]);
    expect(second.headers.get('link')).toBeNull();
  });

  it('refuses bad thresholds with 422, and unknown fields', async () => {
    for (const threshold of [-1, 1.5, '100', null, Number.MAX_SAFE_INTEGER + 2]) {
      const res = await put(ada, { threshold });
      expect([res.status, res.headers.get('content-type')]).toEqual([422, expect.stringContaining('application/problem+json')]);
      expect(res.body.errors).toHaveProperty('threshold');
    }
    expect((await put(ada, {})).status).toBe(422);
    expect([400, 422]).toContain((await put(ada, { threshold: 5, extra: true })).status);
    expect((await f.call('GET', `${path}/crossings?cursor=forged`, { token: ada.idToken, tenant: ada.tenantId })).status).toBe(400);
  });

  it('is for tenant admins only: 403 for a viewer and a foreign tenant, 401 anonymous', async () => {
    for (const [method, p] of [['GET', path], ['GET', `${path}/crossings`], ['DELETE', path]] as const) {
      const res = await f.call(method, p, { token: viewer.idToken, tenant: ada.tenantId });
      expect(res.status).toBe(403);
    }
    expect((await put(viewer, { threshold: 1 })).status).toBe(403);
    expect((await put(stranger, { threshold: 1 })).status).toBe(403);
    expect((await f.call('GET', path, { tenant: ada.tenantId })).status).toBe(401);
  });

  it('DELETE removes the threshold and keeps its crossings', async () => {
    expect((await f.call('DELETE', path, { token: ada.idToken, tenant: ada.tenantId })).status).toBe(204);
    expect((await f.call('GET', path, { token: ada.idToken, tenant: ada.tenantId })).body).toMatchObject({ threshold: null, armed: false, below: false });
    expect((await f.call('GET', `${path}/crossings`, { token: ada.idToken, tenant: ada.tenantId })).body).toHaveLength(3);
  });
});
