import { TcpProxy, TEST_DATABASE_ADMIN_URL } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * Invitations through real HTTP, Postgres and Redis: what an invitation costs the inviter's request
 * whether or not the e-mail has an account, expiry, withdrawal when the inviter stops being admin.
 * Postgres is reached through a proxy that counts what the app sends it.
 */
describe('invitations (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let pg: TcpProxy;
  let alice: SignedUp;
  const invite = (admin: SignedUp, tenantId: string, email: string, role = 'viewer') => f.call('POST', `/api/tenants/${tenantId}/users`, { token: admin.idToken, json: { email, role } });
  const pendingOf = async (admin: SignedUp, tenantId: string) =>
    ((await f.call('GET', `/api/tenants/${tenantId}/invitations`, { token: admin.idToken })).body as Array<{ id: string; email: string }>).map((i) => i.email).sort();

  beforeAll(async () => {
    pg = await TcpProxy.start(TEST_DATABASE_ADMIN_URL);
    f = await ManagementApiFixture.start({}, { postgres: pg });
    alice = await f.signUp('alice@flagship.test');
  });
  afterAll(async () => {
    await f?.stop();
    await pg?.stop();
  });

  it('asks the same of Postgres and answers the same whether or not the e-mail has an account', async () => {
    // E-mails of one length, so the same statements carry the same bytes.
    const known = await Promise.all([0, 1, 2, 3, 4].map((i) => f.signUp(`known-${i}@flagship.test`)));
    const strangers = [0, 1, 2, 3, 4].map((i) => `other-${i}@flagship.test`);
    expect(new Set([...known.map((k) => k.email), ...strangers].map((e) => e.length)).size).toBe(1);
    // Warm up: the caller's once-a-minute touches happen now, not during a measured request.
    await f.call('GET', `/api/tenants/${alice.tenantId}/invitations`, { token: alice.idToken });
    const measure = async (email: string) => {
      const before = pg.bytesToServer;
      const res = await invite(alice, alice.tenantId, email);
      const sent = pg.bytesToServer - before;
      expect([email, res.status]).toEqual([email, 201]);
      return { sent, keys: Object.keys(res.body).sort(), status: res.body.status as string };
    };
    const forKnown = [];
    const forStrangers = [];
    for (let i = 0; i < 5; i++) {
      forKnown.push(await measure(known[i].email));
      forStrangers.push(await measure(strangers[i]));
    }
    // Background work (another replica's poll, a late touch) only adds: the least each took is the request's own.
    const least = (xs: Array<{ sent: number }>) => Math.min(...xs.map((x) => x.sent));
    expect(least(forKnown)).toBeGreaterThan(0);
    expect(least(forKnown)).toBe(least(forStrangers));
    expect(forKnown[0].keys).toEqual(forStrangers[0].keys);
    expect([...new Set([...forKnown, ...forStrangers].map((x) => x.status))]).toEqual(['pending']);
  });

  it('expires: past its expiresAt it is neither listed (to either side) nor answerable; re-inviting renews it', async () => {
    const sent = await invite(alice, alice.tenantId, 'late@flagship.test');
    expect(Date.parse(sent.body.expiresAt) - Date.parse(sent.body.createdAt)).toBe(14 * 86_400_000);
    const late = await f.signUp('late@flagship.test');
    expect((await f.call('GET', '/api/invitations', { token: late.idToken })).body.map((i: { id: string }) => i.id)).toEqual([sent.body.id]);
    await f.sql(`UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, [sent.body.id]);
    expect((await f.call('GET', '/api/invitations', { token: late.idToken })).body).toEqual([]);
    expect(await pendingOf(alice, alice.tenantId)).not.toContain('late@flagship.test');
    const accept = await f.call('POST', `/api/invitations/${sent.body.id}/accept`, { token: late.idToken });
    expect([accept.status, accept.body.type]).toEqual([404, '/problems/invitation-not-found']);
    expect((await f.call('GET', `/api/tenants/${alice.tenantId}/users`, { token: late.idToken })).status).toBe(403);
    const renewed = await invite(alice, alice.tenantId, 'late@flagship.test');
    expect(renewed.status).toBe(201);
    expect(Date.parse(renewed.body.expiresAt)).toBeGreaterThan(Date.now() + 13 * 86_400_000);
    expect((await f.call('POST', `/api/invitations/${renewed.body.id}/accept`, { token: late.idToken })).status).toBe(200);
  });

  it('is withdrawn when its inviter is demoted or removed, and does not come back when they are made admin again', async () => {
    const team = (await f.call('POST', '/api/tenants', { token: alice.idToken, json: { name: 'Team', primaryEmail: alice.email } })).body.id as string;
    const carol = await f.addMember(alice, team, 'carol@flagship.test', 'admin');
    const dave = await f.addMember(alice, team, 'dave@flagship.test', 'admin');
    const byCarol = await invite(carol, team, 'x@flagship.test');
    await invite(carol, team, 'y@flagship.test');
    await invite(dave, team, 'z@flagship.test');
    await invite(alice, team, 'kept@flagship.test');
    expect(await pendingOf(alice, team)).toEqual(['kept@flagship.test', 'x@flagship.test', 'y@flagship.test', 'z@flagship.test']);

    expect((await f.call('PATCH', `/api/tenants/${team}/users/${carol.userId}`, { token: alice.idToken, json: { role: 'editor' } })).status).toBe(200);
    expect(await pendingOf(alice, team)).toEqual(['kept@flagship.test', 'z@flagship.test']);
    const x = await f.signUp('x@flagship.test');
    expect((await f.call('GET', '/api/invitations', { token: x.idToken })).body).toEqual([]);
    expect((await f.call('POST', `/api/invitations/${byCarol.body.id}/accept`, { token: x.idToken })).status).toBe(404);
    expect((await f.call('PATCH', `/api/tenants/${team}/users/${carol.userId}`, { token: alice.idToken, json: { role: 'admin' } })).status).toBe(200);
    expect(await pendingOf(alice, team)).toEqual(['kept@flagship.test', 'z@flagship.test']);

    // An admin changed to admin again keeps what they sent; a removed one does not.
    expect((await f.call('PATCH', `/api/tenants/${team}/users/${dave.userId}`, { token: alice.idToken, json: { role: 'admin' } })).status).toBe(200);
    expect(await pendingOf(alice, team)).toEqual(['kept@flagship.test', 'z@flagship.test']);
    expect((await f.call('DELETE', `/api/tenants/${team}/users/${dave.userId}`, { token: alice.idToken })).status).toBe(204);
    expect(await pendingOf(alice, team)).toEqual(['kept@flagship.test']);
  });
});
