/**
 * A flag-data stream lasts only as long as its caller's access (real HTTP, Postgres, Redis): the
 * announcements the API makes when it removes a member or deletes a client, or that a tenant
 * changed, end the streams they concern at once, and a stream ends at its token's expiry. The
 * streams here would otherwise last FLAG_STREAM_MAX_AGE_SECONDS (15 min), so an end within seconds
 * can only come from the rule under test.
 */
import { OpenFeature, ProviderEvents, ProviderStatus } from '@openfeature/server-sdk';
import { AccessTokenIssuer } from '@flagship/oauth';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { FlagshipInProcessProvider } from '@flagship/sdk';
import { http, waitFor } from '@flagship/testing';
import { FlagStreamClient } from '../testing/flag-stream.fixture';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

describe('flag-data streams end when their access does (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  const streams = new FlagStreamClient(() => f.url);

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ RATE_LIMIT_FREE: '100000' });
    owner = await f.signUp();
    const created = await f.call('POST', '/api/flags', { token: owner.idToken, tenant: owner.tenantId, json: { key: 'banner', name: 'banner', type: 'boolean', defaultValue: false } });
    expect(created.status).toBe(201);
  }, 60_000);
  afterEach(() => streams.closeAll());
  afterAll(async () => {
    await OpenFeature.close();
    await f?.stop();
  });

  const asUser = (u: SignedUp) => ({ authorization: `Bearer ${u.idToken}`, 'x-tenant-id': owner.tenantId });
  const byOwner = () => ({ token: owner.idToken, tenant: owner.tenantId });
  const newClient = async () => {
    const res = await f.call('POST', '/api/oauth/clients', { ...byOwner(), json: { name: `reader ${Math.random()}`, scopes: ['flags:read'] } });
    expect(res.status).toBe(201);
    return { clientId: res.body.clientId as string, clientSecret: res.body.clientSecret as string };
  };
  const tokenOf = async (client: { clientId: string; clientSecret: string }) => {
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }).toString();
    const res = await http(`${f.url}/oauth/token`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(200);
    return res.body.access_token as string;
  };
  /** An open stream that has received its put. */
  const opened = async (headers: Record<string, string>) => {
    const o = await streams.open(headers);
    expect(o.status).toBe(200);
    expect((await o.stream!.next()).event).toBe('put');
    return o.stream!;
  };
  const endReason = (s: { events: Array<{ event: string; data: any }> }) => s.events.filter((e) => e.event === 'end').map((e) => e.data.reason);

  it("ends a removed member's stream the moment the removal is announced; the owner's stays; the reconnect is refused", async () => {
    const member = await f.addMember(owner, owner.tenantId, `leaver-${Date.now()}@flagship.test`, 'viewer');
    const theirs = await opened(asUser(member));
    const mine = await opened(asUser(owner));
    expect((await f.call('DELETE', `/api/tenants/${owner.tenantId}/users/${member.userId}`, byOwner())).status).toBe(204);
    expect(await theirs.whenEnded(5000)).toBeLessThan(5000);
    expect(endReason(theirs)).toEqual(['access-withdrawn']);
    // The owner's stream still carries changes.
    expect((await f.call('PATCH', '/api/flags/banner', { ...byOwner(), json: { enabled: true } })).status).toBe(200);
    expect((await mine.next()).event).toBe('patch');
    expect(mine.ended).toBe(false);
    const again = await streams.open(asUser(member));
    expect([again.status, again.problem?.type]).toEqual([403, '/problems/tenant-access-denied']);
  });

  it('keeps the stream of a member whose role changes but who can still read flags', async () => {
    const member = await f.addMember(owner, owner.tenantId, `promoted-${Date.now()}@flagship.test`, 'viewer');
    const theirs = await opened(asUser(member));
    expect((await f.call('PATCH', `/api/tenants/${owner.tenantId}/users/${member.userId}`, { ...byOwner(), json: { role: 'editor' } })).status).toBe(200);
    // The change is decided again (still a reader): the stream goes on and carries the next change.
    expect((await f.call('PATCH', '/api/flags/banner', { ...byOwner(), json: { enabled: false } })).status).toBe(200);
    expect((await theirs.next()).event).toBe('patch');
    expect(theirs.ended).toBe(false);
  });

  it("ends a deleted OAuth client's streams the moment it is deleted; its token is refused on reconnect", async () => {
    const client = await newClient();
    const token = await tokenOf(client);
    const [a, b] = await Promise.all([opened({ authorization: `Bearer ${token}` }), opened({ authorization: `Bearer ${token}` })]);
    const kept = await opened({ authorization: `Bearer ${await tokenOf(await newClient())}` });
    expect((await f.call('DELETE', `/api/oauth/clients/${client.clientId}`, byOwner())).status).toBe(204);
    for (const s of [a!, b!]) {
      expect(await s.whenEnded(5000)).toBeLessThan(5000);
      expect(endReason(s)).toEqual(['access-withdrawn']);
    }
    expect(kept.ended).toBe(false);
    const again = await streams.open({ authorization: `Bearer ${token}` });
    expect([again.status, again.problem?.type]).toEqual([401, '/problems/invalid-token']);
  });

  it('decides access again on a tenant change: a membership removed without a word ends at the announcement', async () => {
    const member = await f.addMember(owner, owner.tenantId, `silent-${Date.now()}@flagship.test`, 'viewer');
    const theirs = await opened(asUser(member));
    // Removed in SQL: nothing is announced, and the stream goes on.
    await f.sql('DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2', [owner.tenantId, member.userId]);
    expect((await f.call('PATCH', '/api/flags/banner', { ...byOwner(), json: { enabled: true } })).status).toBe(200);
    expect((await theirs.next()).event).toBe('patch');
    // The tenant-changed announcement (an admin change, billing) makes the API decide every stream of the tenant again.
    await f.svc.app.get<PubSub>(PUBSUB).publish(CHANNELS.tenantChanged, { tenantId: owner.tenantId });
    expect(await theirs.whenEnded(5000)).toBeLessThan(5000);
    expect(endReason(theirs)).toEqual(['access-withdrawn']);
  });

  it("ends a stream at its token's expiry", async () => {
    const client = await newClient();
    // A real token of the app's issuer with 2 s left (as if issued an hour ago, less 2 s).
    const issued = await f.svc.app.get(AccessTokenIssuer).issue(
      { clientId: client.clientId, tenantId: owner.tenantId, scopes: ['flags:read'], productKeys: [] },
      new Date(Date.now() - 3_598_000),
    );
    const expiresAt = Date.now() + 2000;
    const s = await opened({ authorization: `Bearer ${issued.access_token}` });
    await s.whenEnded(6000);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt - 1000);
    expect(endReason(s)).toEqual(['credential-expired']);
  });

  it("the SDK's in-process provider of a deleted client reconnects, is refused and reports PROVIDER_ERROR", async () => {
    const client = await newClient();
    const provider = new FlagshipInProcessProvider({ baseUrl: f.url, auth: client, reconnectDelayMs: 50, maxReconnectDelayMs: 200 });
    await OpenFeature.setProviderAndWait('revoked', provider);
    const of = OpenFeature.getClient('revoked');
    const errors: string[] = [];
    of.addHandler(ProviderEvents.Error, (details) => errors.push(details?.message ?? ''));
    expect(of.providerStatus).toBe(ProviderStatus.READY);
    expect((await of.getBooleanDetails('banner', false, { targetingKey: 'u1' })).errorCode).toBeUndefined();
    expect((await f.call('DELETE', `/api/oauth/clients/${client.clientId}`, byOwner())).status).toBe(204);
    await waitFor(async () => errors.length > 0, 5000, 20);
    expect(of.providerStatus).toBe(ProviderStatus.ERROR);
  });
});
