import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/** Quotas per tenant and per user (QUOTA_* settings, small here), through real HTTP and Postgres. */
describe('quotas (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  const as = (u: SignedUp, json?: unknown) => ({ token: u.idToken, tenant: u.tenantId, json });
  const expectQuota = (res: { status: number; body: Record<string, unknown>; headers: Headers }, quota: string, limit: number, current: number) =>
    expect([res.status, res.headers.get('content-type'), res.body]).toEqual([
      409,
      'application/problem+json; charset=utf-8',
      expect.objectContaining({ type: '/problems/quota-exceeded', status: 409, quota, limit, current, detail: expect.any(String) }),
    ]);
  const flag = (key: string) => ({ key, name: key, type: 'boolean', defaultValue: false });
  const ld = (...keys: string[]) => ({ flags: Object.fromEntries(keys.map((key) => [key, { key, on: true, variations: [true, false], offVariation: 1, fallthrough: { variation: 0 } }])) });
  const flagCount = async () => (await f.call('GET', '/api/flags?limit=100', as(owner))).body.length as number;

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ QUOTA_FLAGS_PER_TENANT: '5', QUOTA_ENVIRONMENTS_PER_TENANT: '4', QUOTA_OAUTH_CLIENTS_PER_TENANT: '2', QUOTA_TENANTS_PER_USER: '2', QUOTA_INVITATIONS_PER_TENANT: '2' });
    owner = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('flags per tenant: concurrent creates never pass the quota', async () => {
    const results = await Promise.all(Array.from({ length: 9 }, (_, i) => f.call('POST', '/api/flags', as(owner, flag(`race-${i}`)))));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 201, 201, 201, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expectQuota(r, 'flags-per-tenant', 5, 5);
    expect(await flagCount()).toBe(5);
  });

  it('flags per tenant: a LaunchDarkly import counts whole; it is written entirely or not at all', async () => {
    for (const { key } of (await f.call('GET', '/api/flags?limit=100', as(owner))).body as Array<{ key: string }>) {
      expect((await f.call('DELETE', `/api/flags/${key}`, as(owner))).status).toBe(204);
    }
    expect((await f.call('POST', '/api/flags', as(owner, flag('kept-1')))).status).toBe(201);
    expect((await f.call('POST', '/api/flags', as(owner, flag('kept-2')))).status).toBe(201);
    // 2 flags + 4 new = 6 > 5: refused, nothing of it written.
    expectQuota(await f.call('POST', '/api/flags/import', as(owner, ld('kept-1', 'ld-a', 'ld-b', 'ld-c', 'ld-d'))), 'flags-per-tenant', 5, 2);
    expect(await flagCount()).toBe(2);
    // Replacing existing flags does not count: 2 + 3 new = 5.
    const fits = await f.call('POST', '/api/flags/import', as(owner, ld('kept-1', 'ld-a', 'ld-b', 'ld-c')));
    expect([fits.status, fits.body.created, fits.body.replaced]).toEqual([200, ['ld-a', 'ld-b', 'ld-c'], ['kept-1']]);
    expectQuota(await f.call('POST', '/api/flags', as(owner, flag('one-too-many'))), 'flags-per-tenant', 5, 5);
    // Another tenant has a quota of its own.
    const other = await f.signUp();
    expect((await f.call('POST', '/api/flags', as(other, flag('one-too-many')))).status).toBe(201);
  });

  it('environments per tenant (the three defaults count)', async () => {
    expect((await f.call('POST', '/api/environments', as(owner, { key: 'qa', name: 'QA' }))).status).toBe(201);
    expectQuota(await f.call('POST', '/api/environments', as(owner, { key: 'qa-2', name: 'QA 2' })), 'environments-per-tenant', 4, 4);
    expect((await f.call('GET', '/api/environments', as(owner))).body.map((e: { key: string }) => e.key)).not.toContain('qa-2');
  });

  it('OAuth clients per tenant: concurrent creates never pass it; a deleted client frees its place', async () => {
    const create = (name: string) => f.call('POST', '/api/oauth/clients', as(owner, { name, scopes: ['flags:read'] }));
    const results = await Promise.all([create('a'), create('b'), create('c'), create('d')]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 409, 409]);
    const refused = results.find((r) => r.status === 409)!;
    expectQuota(refused, 'oauth-clients-per-tenant', 2, 2);
    // No secret in the refusal, and no client made.
    expect(JSON.stringify(refused.body)).not.toMatch(/clientSecret/);
    const made = results.filter((r) => r.status === 201);
    expect((await f.call('DELETE', `/api/oauth/clients/${made[0]!.body.clientId}`, as(owner))).status).toBe(204);
    expect((await create('e')).status).toBe(201);
  });

  it('tenants per user: POST /api/tenants stops at the quota (the personal tenant counts); sign-up always gets its own', async () => {
    const create = (name: string) => f.call('POST', '/api/tenants', { token: owner.idToken, json: { name, primaryEmail: owner.email } });
    const [a, b] = await Promise.all([create('Second'), create('Third')]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    expectQuota(a.status === 409 ? a : b, 'tenants-per-user', 2, 2);
    expect((await f.call('GET', '/api/tenants', { token: owner.idToken })).body).toHaveLength(2);
    const newcomer = await f.signUp();
    expect(newcomer.tenantId).toEqual(expect.any(String));
  });

  it('tenants per user counts the tenants the user created: stepping down from admin (another member made admin) frees no place', async () => {
    const maker = await f.signUp();
    const made = await f.call('POST', '/api/tenants', { token: maker.idToken, json: { name: 'Made', primaryEmail: maker.email } });
    expect(made.status).toBe(201);
    const deputy = await f.addMember(maker, made.body.id, `deputy-${maker.email}`, 'admin');
    // The maker steps down in both tenants they made, leaving admins behind; they administer none now.
    const stepDown = (tenantId: string, admin: SignedUp) => f.call('PATCH', `/api/tenants/${tenantId}/users/${maker.userId}`, { token: admin.idToken, json: { role: 'viewer' } });
    expect((await stepDown(made.body.id, deputy)).status).toBe(200);
    await f.addMember(maker, maker.tenantId, `heir-${maker.email}`, 'admin').then((heir) => stepDown(maker.tenantId, heir)).then((r) => expect(r.status).toBe(200));
    const again = await f.call('POST', '/api/tenants', { token: maker.idToken, json: { name: 'One more', primaryEmail: maker.email } });
    expectQuota(again, 'tenants-per-user', 2, 2);
    // Tenants others created in which the maker is a member count against their creators, not the maker.
    expect((await f.call('GET', '/api/tenants', { token: maker.idToken })).body).toHaveLength(2);
    expect((await f.call('POST', '/api/tenants', { token: deputy.idToken, json: { name: "Deputy's second", primaryEmail: deputy.email } })).status).toBe(201);
  });

  it('pending invitations per tenant: concurrent invites never pass it; re-inviting a pending e-mail adds none; a withdrawn one frees its place', async () => {
    const admin = await f.signUp();
    const invite = (email: string, role = 'viewer') => f.call('POST', `/api/tenants/${admin.tenantId}/users`, { token: admin.idToken, json: { email, role } });
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((x) => invite(`${x}-${admin.email}`)));
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 409, 409]);
    expectQuota(results.find((r) => r.status === 409)!, 'invitations-per-tenant', 2, 2);
    const made = results.filter((r) => r.status === 201);
    expect((await invite(made[0].body.email, 'admin')).status).toBe(201);
    expectQuota(await invite(`e-${admin.email}`), 'invitations-per-tenant', 2, 2);
    expect((await f.call('DELETE', `/api/tenants/${admin.tenantId}/invitations/${made[1].body.id}`, as(admin))).status).toBe(204);
    expect((await invite(`e-${admin.email}`)).status).toBe(201);
    expect((await f.call('GET', `/api/tenants/${admin.tenantId}/invitations`, as(admin))).body).toHaveLength(2);
  });
});
