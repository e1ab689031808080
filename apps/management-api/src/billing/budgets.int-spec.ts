import type { ManagementApiFixture, SignedUp } from '../testing/management-api.fixture';
import { startBillingCast } from './billing-cast.fixture';

describe('/api/billing/budgets (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let ada: SignedUp;
  let viewer: SignedUp;
  let stranger: SignedUp;
  /** A client of Ada's tenant, and one of the stranger's. */
  let adaClient: string;
  let strangerClient: string;

  beforeAll(async () => {
    ({ f, ada, viewer, stranger } = await startBillingCast({ QUOTA_BUDGETS_PER_TENANT: '3' }));
    const newClient = async (u: SignedUp) => {
      const res = await f.call('POST', '/api/oauth/clients', { token: u.idToken, tenant: u.tenantId, json: { name: 'backend', scopes: ['ai:invoke'] } });
      if (res.status !== 201) throw new Error(`client: ${res.status} ${res.text}`);
      return res.body.clientId as string;
    };
    adaClient = await newClient(ada);
    strangerClient = await newClient(stranger);
  });
  afterAll(async () => {
    await f?.stop();
  });

  const path = '/api/billing/budgets';
  const put = (u: SignedUp, kind: string, id: string, json: unknown, tenant = ada.tenantId) => f.call('PUT', `${path}/${kind}/${encodeURIComponent(id)}`, { token: u.idToken, tenant, json });
  const list = (u = ada, query = '') => f.call('GET', `${path}${query}`, { token: u.idToken, tenant: ada.tenantId });

  /** What the gateway's reservation and settlement leave in this month's row (their statements are exercised in libs/ledger and the gateway). */
  async function spend(kind: string, id: string, spent: number, reserved: number): Promise<void> {
    await f.sql(
      `UPDATE budget_months SET spent = $4, reserved = $5 WHERE tenant_id = $1 AND scope_kind = $2 AND scope_id = $3 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date`,
      [ada.tenantId, kind, id, spent, reserved],
    );
  }

  it('is empty at first; PUT sets a client budget and a product-key budget, listed with this month\'s spent and reserved', async () => {
    expect((await list()).body).toEqual([]);
    const client = await put(ada, 'client', adaClient, { monthlyCapMicroCredits: 5_000_000 });
    expect([client.status, client.body]).toEqual([
      200,
      {
        kind: 'client',
        id: adaClient,
        monthlyCapMicroCredits: 5_000_000,
        spentMicroCredits: 0,
        reservedMicroCredits: 0,
        month: expect.stringMatching(/^\d{4}-\d{2}$/),
        createdAt: expect.stringMatching(/Z$/),
        updatedAt: expect.stringMatching(/Z$/),
      },
    ]);
    expect((await put(ada, 'product', 'core', { monthlyCapMicroCredits: 0 })).status).toBe(200);
    await spend('client', adaClient, 1_200, 300);
    // Changing the cap keeps what the month spent.
    expect((await put(ada, 'client', adaClient, { monthlyCapMicroCredits: 7_000_000 })).body).toMatchObject({ monthlyCapMicroCredits: 7_000_000, spentMicroCredits: 1_200, reservedMicroCredits: 300 });
    const all = await list();
    expect(all.status).toBe(200);
    expect(all.body.map((b: { kind: string; id: string; monthlyCapMicroCredits: number; spentMicroCredits: number }) => [b.kind, b.id, b.monthlyCapMicroCredits, b.spentMicroCredits])).toEqual([
      ['client', adaClient, 7_000_000, 1_200],
      ['product', 'core', 0, 0],
    ]);
    const [month] = all.body as Array<{ month: string }>;
    expect(month!.month).toBe(new Date().toISOString().slice(0, 7));
  });

  it('pages with Link rel="next"', async () => {
    const first = await list(ada, '?limit=1');
    expect(first.body).toHaveLength(1);
    const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.get('link')))![1]!;
    const second = await f.call('GET', next, { token: ada.idToken, tenant: ada.tenantId });
    expect(second.body.map((b: { id: string }) => b.id)).toEqual(['core']);
    expect(second.headers.get('link')).toBeNull();
    expect((await list(ada, '?cursor=forged')).status).toBe(400);
  });

  it('404 for a client of another tenant, a client that does not exist, or a product key the gateway does not know', async () => {
    for (const [kind, id] of [['client', strangerClient], ['client', 'ffc_doesNotExist0000000000'], ['product', 'nonesuch']] as const) {
      const res = await put(ada, kind, id, { monthlyCapMicroCredits: 10 });
      expect([res.status, res.headers.get('content-type')]).toEqual([404, expect.stringContaining('application/problem+json')]);
    }
    // The stranger's client is not named in Ada's list, nor was anything written.
    expect((await list()).body).toHaveLength(2);
    expect((await f.call('DELETE', `${path}/client/${strangerClient}`, { token: ada.idToken, tenant: ada.tenantId })).status).toBe(404);
  });

  it('refuses bad kinds, ids and caps with 4xx problems, and unknown fields', async () => {
    for (const monthlyCapMicroCredits of [-1, 1.5, '100', null, Number.MAX_SAFE_INTEGER + 2]) {
      const res = await put(ada, 'client', adaClient, { monthlyCapMicroCredits });
      expect([res.status, res.headers.get('content-type')]).toEqual([422, expect.stringContaining('application/problem+json')]);
      expect(res.body.errors).toHaveProperty('monthlyCapMicroCredits');
    }
    expect((await put(ada, 'client', adaClient, {})).status).toBe(422);
    expect([400, 422]).toContain((await put(ada, 'client', adaClient, { monthlyCapMicroCredits: 5, extra: true })).status);
    for (const [kind, id] of [['tenant', adaClient], ['client', 'x'.repeat(65)], ['product', 'has space']]) {
      const res = await put(ada, kind!, id!, { monthlyCapMicroCredits: 5 });
      expect([400, 422]).toContain(res.status);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
  });

  it('is for tenant admins only: 403 for a viewer and a foreign tenant, 401 anonymous', async () => {
    expect((await list(viewer)).status).toBe(403);
    expect((await put(viewer, 'client', adaClient, { monthlyCapMicroCredits: 1 })).status).toBe(403);
    expect((await f.call('DELETE', `${path}/client/${adaClient}`, { token: viewer.idToken, tenant: ada.tenantId })).status).toBe(403);
    expect((await put(stranger, 'client', adaClient, { monthlyCapMicroCredits: 1 })).status).toBe(403);
    expect((await f.call('GET', path, { tenant: ada.tenantId })).status).toBe(401);
  });

  it('a tenant holds at most QUOTA_BUDGETS_PER_TENANT budgets (409 quota-exceeded); changing one is not adding', async () => {
    const third = await f.call('POST', '/api/oauth/clients', { token: ada.idToken, tenant: ada.tenantId, json: { name: 'third', scopes: ['ai:invoke'] } });
    const fourth = await f.call('POST', '/api/oauth/clients', { token: ada.idToken, tenant: ada.tenantId, json: { name: 'fourth', scopes: ['ai:invoke'] } });
    expect((await put(ada, 'client', third.body.clientId, { monthlyCapMicroCredits: 1 })).status).toBe(200);
    const over = await put(ada, 'client', fourth.body.clientId, { monthlyCapMicroCredits: 1 });
    expect([over.status, over.body.quota, over.body.limit]).toEqual([409, 'budgets-per-tenant', 3]);
    expect((await put(ada, 'client', adaClient, { monthlyCapMicroCredits: 9 })).status).toBe(200);
  });

  it('DELETE removes a budget (204), then 404', async () => {
    expect((await f.call('DELETE', `${path}/product/core`, { token: ada.idToken, tenant: ada.tenantId })).status).toBe(204);
    const again = await f.call('DELETE', `${path}/product/core`, { token: ada.idToken, tenant: ada.tenantId });
    expect([again.status, again.headers.get('content-type')]).toEqual([404, expect.stringContaining('application/problem+json')]);
    expect((await list()).body.map((b: { id: string }) => b.id)).not.toContain('core');
  });
});
