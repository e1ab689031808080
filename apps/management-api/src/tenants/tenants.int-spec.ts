import { ManagementApiFixture, PLATFORM_ADMIN, type SignedUp } from '../testing/management-api.fixture';
import { waitFor } from '@flagship/testing';

describe('tenants and tenant users (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let alice: SignedUp;
  let bob: SignedUp;

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    alice = await f.signUp('alice@flagship.test');
    bob = await f.signUp('bob@flagship.test');
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('lists only the caller\'s tenants', async () => {
    const res = await f.call('GET', '/api/tenants', { token: alice.idToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        id: alice.tenantId,
        name: expect.any(String),
        primaryEmail: 'alice@flagship.test',
        contactName: expect.any(String),
        isSandbox: false,
        subscription: { plan: 'free', status: 'active' },
        createdAt: expect.stringMatching(/Z$/),
      },
    ]);
  });

  it('creates a tenant with the caller as admin, honouring isSandbox', async () => {
    const res = await f.call('POST', '/api/tenants', { token: alice.idToken, json: { name: 'Acme Sandbox', primaryEmail: 'ops@acme.test', contactName: 'Ops', isSandbox: true } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Acme Sandbox', isSandbox: true, subscription: { plan: 'free', status: 'active' } });
    const users = await f.call('GET', `/api/tenants/${res.body.id}/users`, { token: alice.idToken });
    expect(users.body).toEqual([expect.objectContaining({ userId: alice.userId, role: 'admin', email: 'alice@flagship.test' })]);
    const mine = await f.call('GET', '/api/tenants', { token: alice.idToken });
    expect(mine.body.map((t: { id: string }) => t.id)).toContain(res.body.id);
  });

  it('validates the tenant body', async () => {
    const missing = await f.call('POST', '/api/tenants', { token: alice.idToken, json: { contactName: 3, isSandbox: 'yes', owner: 'x' } });
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body.errors).sort()).toEqual(['contactName', 'isSandbox', 'name', 'owner', 'primaryEmail']);
    const big = await f.call('POST', '/api/tenants', { token: alice.idToken, json: { name: 'x'.repeat(1_100_000), primaryEmail: 'a@b.test' } });
    expect(big.status).toBe(413);
    const text = await f.call('POST', '/api/tenants', { token: alice.idToken, headers: { 'content-type': 'text/plain' }, json: undefined });
    expect([200, 201]).not.toContain(text.status);
  });

  it('415 for a non-JSON body', async () => {
    const res = await fetch(`${f.url}/api/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.idToken}`, 'content-type': 'text/plain' },
      body: 'name=x',
    });
    expect(res.status).toBe(415);
  });

  it('adds users by e-mail (invited users bind on first sign-in), admins only', async () => {
    const added = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email: 'grace@flagship.test', role: 'editor' } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ email: 'grace@flagship.test', role: 'editor', displayName: '', status: 'invited', lastAccessedAt: null });
    const dup = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email: 'GRACE@flagship.test', role: 'viewer' } });
    expect(dup.status).toBe(409);
    const badRole = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email: 'x@flagship.test', role: 'owner' } });
    expect([badRole.status, Object.keys(badRole.body.errors)]).toEqual([422, ['role']]);

    // Grace signs up: she lands in Alice's tenant as editor, with the same user id.
    const grace = await f.signUp('grace@flagship.test');
    expect(grace.userId).toBe(added.body.userId);
    const editorAdds = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: grace.idToken, json: { email: 'z@flagship.test', role: 'viewer' } });
    expect([editorAdds.status, editorAdds.body.type]).toEqual([403, '/problems/role-required']);
    const editorLists = await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: grace.idToken });
    expect(editorLists.status).toBe(200);
    // Signed in, she is active, and her requests in the tenant are recorded as her last access there.
    const graceRow = async () => (await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken })).body.find((u: { email: string }) => u.email === 'grace@flagship.test');
    await waitFor(async () => (await graceRow()).lastAccessedAt !== null, 5000, 50);
    expect(await graceRow()).toMatchObject({ status: 'active', lastAccessedAt: expect.any(String) });
  });

  it('changes roles and removes members (invitations too), admins only, never leaving a tenant without an admin', async () => {
    const team = (await f.call('POST', '/api/tenants', { token: alice.idToken, json: { name: 'Team', primaryEmail: 'alice@flagship.test' } })).body.id as string;
    const users = `/api/tenants/${team}/users`;
    const add = async (email: string, role: string) => (await f.call('POST', users, { token: alice.idToken, json: { email, role } })).body.userId as string;
    const carol = await f.signUp('carol@flagship.test');
    expect(await add('carol@flagship.test', 'viewer')).toBe(carol.userId);
    const invited = await add('dave-invited@flagship.test', 'viewer');

    // A viewer may not add; promoted to admin she may, and the change is seen at once.
    expect((await f.call('POST', users, { token: carol.idToken, json: { email: 'e@flagship.test', role: 'viewer' } })).status).toBe(403);
    const promoted = await f.call('PATCH', `${users}/${carol.userId}`, { token: alice.idToken, json: { role: 'admin' } });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ userId: carol.userId, email: 'carol@flagship.test', role: 'admin' });
    expect((await f.call('POST', users, { token: carol.idToken, json: { email: 'e@flagship.test', role: 'viewer' } })).status).toBe(201);

    // Bad input: 422 for the role, 404 for someone who is not a member (or not a user id at all).
    const bad = await f.call('PATCH', `${users}/${carol.userId}`, { token: alice.idToken, json: { role: 'owner' } });
    expect([bad.status, Object.keys(bad.body.errors)]).toEqual([422, ['role']]);
    for (const who of [bob.userId, 'not-a-uuid', '00000000-0000-4000-8000-000000000000']) {
      const res = await f.call('PATCH', `${users}/${who}`, { token: alice.idToken, json: { role: 'viewer' } });
      expect([who, res.status, res.body.type]).toEqual([who, 404, '/problems/member-not-found']);
      expect((await f.call('DELETE', `${users}/${who}`, { token: alice.idToken })).status).toBe(404);
    }

    // Withdraw the invitation of someone who never signed in.
    expect((await f.call('DELETE', `${users}/${invited}`, { token: alice.idToken })).status).toBe(204);
    expect((await f.call('DELETE', `${users}/${invited}`, { token: alice.idToken })).status).toBe(404);
    const listed = (await f.call('GET', users, { token: alice.idToken })).body as { userId: string }[];
    expect(listed.map((u) => u.userId)).not.toContain(invited);

    // Alice steps down (Carol is admin), then Carol, the last admin, can neither step down nor leave.
    expect((await f.call('PATCH', `${users}/${alice.userId}`, { token: carol.idToken, json: { role: 'editor' } })).body.role).toBe('editor');
    const stepDown = await f.call('PATCH', `${users}/${carol.userId}`, { token: carol.idToken, json: { role: 'viewer' } });
    expect([stepDown.status, stepDown.body.type]).toEqual([409, '/problems/last-admin']);
    expect((await f.call('DELETE', `${users}/${carol.userId}`, { token: carol.idToken })).status).toBe(409);
    // Alice, an editor now, may no longer change roles; a non-member gets 403.
    expect((await f.call('PATCH', `${users}/${carol.userId}`, { token: alice.idToken, json: { role: 'viewer' } })).status).toBe(403);
    expect((await f.call('DELETE', `${users}/${alice.userId}`, { token: bob.idToken })).status).toBe(403);

    // Removed, Alice no longer sees the tenant.
    expect((await f.call('DELETE', `${users}/${alice.userId}`, { token: carol.idToken })).status).toBe(204);
    expect((await f.call('GET', users, { token: alice.idToken })).status).toBe(403);
    const hers = (await f.call('GET', '/api/tenants', { token: alice.idToken })).body as { id: string }[];
    expect(hers.map((t) => t.id)).not.toContain(team);
  });

  it('a viewer cannot add users', async () => {
    await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email: 'vic@flagship.test', role: 'viewer' } });
    const vic = await f.signUp('vic@flagship.test');
    const res = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: vic.idToken, json: { email: 'w@flagship.test', role: 'viewer' } });
    expect(res.status).toBe(403);
  });

  it('paginates users with a Link header', async () => {
    const first = await f.call('GET', `/api/tenants/${alice.tenantId}/users?limit=1`, { token: alice.idToken });
    expect(first.body).toHaveLength(1);
    const link = first.headers.get('link');
    expect(link).toMatch(/^<\/api\/tenants\/.+\/users\?limit=1&cursor=.+>; rel="next"$/);
    const next = await f.call('GET', link!.slice(1, link!.indexOf('>')), { token: alice.idToken });
    expect(next.status).toBe(200);
    expect(next.body[0].userId).not.toBe(first.body[0].userId);
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/users?limit=0`, { token: alice.idToken })).status).toBe(422);
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/users?cursor=bogus`, { token: alice.idToken })).status).toBe(400);
  });

  it('isolates tenants: 403 to non-members, 404 only for a platform admin asking about a tenant that does not exist', async () => {
    const foreign = await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: bob.idToken });
    expect([foreign.status, foreign.body.type]).toEqual([403, '/problems/tenant-access-denied']);
    const add = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: bob.idToken, json: { email: 'bob2@flagship.test', role: 'admin' } });
    expect(add.status).toBe(403);
    const ghost = '00000000-0000-4000-8000-000000000000';
    expect((await f.call('GET', `/api/tenants/${ghost}/users`, { token: bob.idToken })).status).toBe(403);
    expect((await f.call('GET', '/api/tenants/not-a-uuid/users', { token: bob.idToken })).status).toBe(403);
    const root = await f.signUp(PLATFORM_ADMIN);
    expect((await f.call('GET', `/api/tenants/${ghost}/users`, { token: root.idToken })).status).toBe(404);
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: root.idToken })).status).toBe(403);
    const bobs = await f.call('GET', '/api/tenants', { token: bob.idToken });
    expect(bobs.body.map((t: { id: string }) => t.id)).toEqual([bob.tenantId]);
  });
});
