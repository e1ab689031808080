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

  it('invites by e-mail: the same answer whether or not the e-mail has an account, and nobody joins before accepting', async () => {
    const invite = (email: string, role: string) => f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email, role } });
    const stranger = await invite('grace@flagship.test', 'editor');
    const known = await invite('bob@flagship.test', 'viewer');
    for (const [res, email, role] of [[stranger, 'grace@flagship.test', 'editor'], [known, 'bob@flagship.test', 'viewer']] as const) {
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        tenantId: alice.tenantId,
        tenantName: expect.any(String),
        email,
        role,
        status: 'pending',
        createdAt: expect.stringMatching(/Z$/),
        expiresAt: expect.stringMatching(/Z$/),
        respondedAt: null,
      });
      expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt)).toBe(14 * 86_400_000);
    }
    // Nothing about Bob's account: no user id, display name or status beyond 'pending'.
    expect(known.text).not.toContain(bob.userId);
    // Bob is not a member until he accepts.
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: bob.idToken })).status).toBe(403);
    const members = (await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken })).body as { email: string }[];
    expect(members.map((u) => u.email)).toEqual(['alice@flagship.test']);
    const pending = await f.call('GET', `/api/tenants/${alice.tenantId}/invitations`, { token: alice.idToken });
    expect(pending.body.map((i: { email: string }) => i.email).sort()).toEqual(['bob@flagship.test', 'grace@flagship.test']);

    // Inviting again replaces the role of the pending invitation; an existing member is 409; a bad role 422.
    const again = await invite('GRACE@flagship.test', 'admin');
    expect([again.status, again.body.id, again.body.role]).toEqual([201, stranger.body.id, 'admin']);
    expect((await invite('alice@flagship.test', 'viewer')).status).toBe(409);
    const badRole = await invite('x@flagship.test', 'owner');
    expect([badRole.status, Object.keys(badRole.body.errors)]).toEqual([422, ['role']]);

    // Bob sees his invitation and declines it: still not a member, and it is gone.
    const bobs = await f.call('GET', '/api/invitations', { token: bob.idToken });
    expect(bobs.body).toEqual([expect.objectContaining({ id: known.body.id, tenantId: alice.tenantId, role: 'viewer', status: 'pending' })]);
    const declined = await f.call('POST', `/api/invitations/${known.body.id}/decline`, { token: bob.idToken });
    expect([declined.status, declined.body.status]).toEqual([200, 'declined']);
    expect((await f.call('POST', `/api/invitations/${known.body.id}/accept`, { token: bob.idToken })).status).toBe(404);
    expect((await f.call('GET', '/api/invitations', { token: bob.idToken })).body).toEqual([]);
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: bob.idToken })).status).toBe(403);
  });

  it('a new invitee gets a tenant of their own at sign-up, accepts to join, and writes without X-Tenant-ID stay in their own tenant', async () => {
    const invited = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email: 'hana@flagship.test', role: 'admin' } });
    expect(invited.status).toBe(201);
    const hana = await f.signUp('hana@flagship.test');
    expect(hana.tenantId).not.toBe(alice.tenantId);
    expect((await f.call('GET', '/api/tenants', { token: hana.idToken })).body.map((t: { id: string }) => t.id)).toEqual([hana.tenantId]);

    // Nobody else can answer it: another user, or a client token.
    expect((await f.call('POST', `/api/invitations/${invited.body.id}/accept`, { token: bob.idToken })).status).toBe(404);
    expect((await f.call('POST', '/api/invitations/not-a-uuid/accept', { token: hana.idToken })).status).toBe(404);

    const mine = await f.call('GET', '/api/invitations', { token: hana.idToken });
    expect(mine.body).toEqual([expect.objectContaining({ id: invited.body.id, tenantId: alice.tenantId, tenantName: invited.body.tenantName, role: 'admin' })]);
    const accepted = await f.call('POST', `/api/invitations/${invited.body.id}/accept`, { token: hana.idToken });
    expect([accepted.status, accepted.body.status, accepted.body.respondedAt]).toEqual([200, 'accepted', expect.stringMatching(/Z$/)]);
    const row = (await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken })).body.find((u: { email: string }) => u.email === 'hana@flagship.test');
    expect(row).toMatchObject({ userId: hana.userId, role: 'admin', status: 'active' });

    // Admin in both now: a write without X-Tenant-ID still lands in her own tenant, never the one she joined.
    const login = await f.call('POST', '/api/v1/auth/login', { json: { idToken: hana.idToken } });
    expect([login.body.data.canonical_tenant_id, login.body.data.active_tenant_id]).toEqual([hana.tenantId, hana.tenantId]);
    const project = await f.call('POST', '/api/projects', { token: hana.idToken, json: { name: 'Where does this go' } });
    expect(project.status).toBe(201);
    const inOwn = await f.call('GET', '/api/projects', { token: hana.idToken, tenant: hana.tenantId });
    const inJoined = await f.call('GET', '/api/projects', { token: hana.idToken, tenant: alice.tenantId });
    expect(inOwn.body.map((p: { id: string }) => p.id)).toContain(project.body.id);
    expect(inJoined.body.map((p: { id: string }) => p.id)).not.toContain(project.body.id);
    // Her requests in the joined tenant are recorded as her last access there.
    const hanaRow = async () => (await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken })).body.find((u: { email: string }) => u.email === 'hana@flagship.test');
    await waitFor(async () => (await hanaRow()).lastAccessedAt !== null, 5000, 50);
  });

  it('an invitation is answered only with the e-mail the identity provider verified', async () => {
    // A user row bound to an identity whose provider does not vouch for the e-mail (signed up before e-mails were checked).
    const account = await f.call('POST', '/dev/idp/accounts', { json: { email: 'ivy@flagship.test', password: 'correct-horse-1', emailVerified: false } });
    await f.sql(`INSERT INTO users (idp_subject, email) VALUES ($1, 'ivy@flagship.test')`, [account.body.uid]);
    const invited = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email: 'ivy@flagship.test', role: 'admin' } });
    expect(invited.status).toBe(201);
    const token = account.body.idToken as string;
    for (const res of [
      await f.call('GET', '/api/invitations', { token }),
      await f.call('POST', `/api/invitations/${invited.body.id}/accept`, { token }),
      await f.call('POST', `/api/invitations/${invited.body.id}/decline`, { token }),
    ]) {
      expect([res.status, res.body.type]).toEqual([403, '/problems/email-not-verified']);
    }
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/invitations`, { token: alice.idToken })).body.map((i: { id: string }) => i.id)).toContain(invited.body.id);
  });

  it('admins withdraw pending invitations; others cannot see or withdraw them', async () => {
    const invited = await f.call('POST', `/api/tenants/${alice.tenantId}/users`, { token: alice.idToken, json: { email: 'withdrawn@flagship.test', role: 'viewer' } });
    const path = `/api/tenants/${alice.tenantId}/invitations/${invited.body.id}`;
    expect((await f.call('DELETE', path, { token: bob.idToken })).status).toBe(403);
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/invitations`, { token: bob.idToken })).status).toBe(403);
    expect((await f.call('DELETE', path, { token: alice.idToken })).status).toBe(204);
    expect((await f.call('DELETE', path, { token: alice.idToken })).status).toBe(404);
    expect((await f.call('DELETE', `/api/tenants/${alice.tenantId}/invitations/not-a-uuid`, { token: alice.idToken })).status).toBe(404);
    const later = await f.signUp('withdrawn@flagship.test');
    expect((await f.call('GET', '/api/invitations', { token: later.idToken })).body).toEqual([]);
  });

  it('changes roles and removes members (invitations too), admins only, never leaving a tenant without an admin', async () => {
    const team = (await f.call('POST', '/api/tenants', { token: alice.idToken, json: { name: 'Team', primaryEmail: 'alice@flagship.test' } })).body.id as string;
    const users = `/api/tenants/${team}/users`;
    const carol = await f.addMember(alice, team, 'carol@flagship.test', 'viewer');

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
    const vic = await f.addMember(alice, alice.tenantId, 'vic@flagship.test', 'viewer');
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
