import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

describe('projects and environments (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let stranger: SignedUp;

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    owner = await f.signUp();
    stranger = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  const as = (u: SignedUp, json?: unknown, tenant = u.tenantId) => ({ token: u.idToken, tenant, json });

  it('creates, reads, lists and patches projects with a right flagCount', async () => {
    const created = await f.call('POST', '/api/projects', as(owner, { name: 'Checkout', description: 'pay', color: '#10b981' }));
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'Checkout',
      description: 'pay',
      color: '#10b981',
      flagCount: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const defaults = await f.call('POST', '/api/projects', as(owner, { name: 'Plain' }));
    expect(defaults.body).toMatchObject({ description: '', color: '#6366f1' });
    await f.call('POST', `/api/flags/projects/${created.body.id}/flags`, as(owner, { key: 'p1', name: 'p1', type: 'boolean', defaultValue: true }));
    await f.call('POST', '/api/flags', as(owner, { key: 'p2', name: 'p2', type: 'boolean', defaultValue: true, projectId: created.body.id }));
    const list = await f.call('GET', '/api/projects', as(owner));
    expect(list.body.map((p: { name: string; flagCount: number }) => [p.name, p.flagCount])).toEqual([
      ['Checkout', 2],
      ['Plain', 0],
    ]);
    const patched = await f.call('PATCH', `/api/projects/${created.body.id}`, as(owner, { color: '#000000' }));
    expect(patched.body).toMatchObject({ name: 'Checkout', color: '#000000', flagCount: 2 });
  });

  it('replays a POST with the same Idempotency-Key, refuses the key with another body', async () => {
    const headers = { 'idempotency-key': 'create-billing-project-1' };
    const first = await f.call('POST', '/api/projects', { ...as(owner, { name: 'Billing' }), headers });
    const again = await f.call('POST', '/api/projects', { ...as(owner, { name: 'Billing' }), headers });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await f.call('POST', '/api/projects', { ...as(owner, { name: 'Billing 2' }), headers });
    expect([other.status, other.body.type]).toEqual([422, '/problems/idempotency-key-reused']);
    const list = await f.call('GET', '/api/projects', as(owner));
    expect(list.body.filter((p: { name: string }) => p.name.startsWith('Billing'))).toHaveLength(1);
    // The key is the caller's own: another tenant's admin with the same key creates their own project.
    const theirs = await f.call('POST', '/api/projects', { ...as(stranger, { name: 'Billing' }), headers });
    expect([theirs.status, theirs.headers.get('idempotent-replayed')]).toEqual([201, null]);
  });

  it('validates bodies and requires X-Tenant-ID on the list', async () => {
    const bad = await f.call('POST', '/api/projects', as(owner, { name: '', color: 'red', extra: 1 }));
    expect([bad.status, Object.keys(bad.body.errors).sort()]).toEqual([422, ['color', 'extra', 'name']]);
    expect((await f.call('PATCH', '/api/projects/00000000-0000-4000-8000-000000000000', as(owner, { name: 'x' }))).status).toBe(404);
    expect((await f.call('GET', '/api/projects', { token: owner.idToken })).status).toBe(400);
    expect((await f.call('GET', '/api/projects/not-a-uuid', as(owner))).status).toBe(404);
  });

  it('hides other tenants\' projects', async () => {
    const mine = await f.call('POST', '/api/projects', as(owner, { name: 'Secret' }));
    expect((await f.call('GET', `/api/projects/${mine.body.id}`, as(stranger))).status).toBe(404);
    expect((await f.call('PATCH', `/api/projects/${mine.body.id}`, as(stranger, { name: 'pwned' }))).status).toBe(404);
    expect((await f.call('GET', '/api/projects', as(stranger, undefined, owner.tenantId))).status).toBe(403);
    const theirs = (await f.call('GET', '/api/projects', as(stranger))).body as Array<{ id: string; name: string }>;
    expect(theirs.map((p) => p.id)).not.toContain(mine.body.id);
    expect(theirs.map((p) => p.name)).toEqual(['Billing']);
  });

  it('starts every tenant with three environments; admins add more, and new ones carry every flag, off', async () => {
    const envs = await f.call('GET', '/api/environments', as(owner));
    expect(envs.body.map((e: { key: string }) => e.key).sort()).toEqual(['development', 'production', 'staging']);
    const created = await f.call('POST', '/api/environments', as(owner, { key: 'qa', name: 'QA' }));
    expect(created.status).toBe(201);
    expect((await f.call('POST', '/api/environments', as(owner, { key: 'qa', name: 'QA again' }))).status).toBe(409);
    expect((await f.call('POST', '/api/environments', as(owner, { key: 'Bad Key', name: 'x' }))).status).toBe(422);
    const inQa = await f.call('GET', '/api/flags/p1', { token: owner.idToken, tenant: owner.tenantId, headers: { 'x-environment': 'qa' } });
    expect([inQa.status, inQa.body.enabled, inQa.body.environment]).toEqual([200, false, 'qa']);
    const editor = await f.addMember(owner, owner.tenantId, 'ed@flagship.test', 'editor');
    expect((await f.call('POST', '/api/environments', as(editor, { key: 'e2', name: 'x' }, owner.tenantId))).status).toBe(403);
  });
});
