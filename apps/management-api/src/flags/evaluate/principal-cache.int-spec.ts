import type { IncomingMessage } from 'node:http';
import { DataSource } from 'typeorm';
import { AccessTokenIssuer } from '@flagship/oauth';
import { ProblemException } from '@flagship/problem-details';
import { CHANNELS, type Channel, PUBSUB, type PubSub } from '@flagship/redis';
import { http, waitFor } from '@flagship/testing';
import { TenantAccessResolver, type TenantPrincipal } from '../../auth/tenant-access.resolver';
import { ManagementApiFixture, type SignedUp } from '../../testing/management-api.fixture';
import { EVALUATE_ACCESS } from './evaluate.route';
import { PrincipalCache } from './principal-cache';

/**
 * The evaluate route's caller cache on the app's real resolver, Postgres and Redis change feed. Each
 * cache here keeps callers far longer (60 s) than a test runs, so a refusal can only come from an
 * announcement, the token's expiry or the refusal of a refresh, the behaviours under test; changes
 * are made in SQL, which announces nothing.
 */
describe('PrincipalCache (real resolver, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let db: DataSource;
  let pubsub: PubSub;
  const caches: PrincipalCache[] = [];

  const started = async (ttlMs: number): Promise<PrincipalCache> => {
    const cache = new PrincipalCache(f.svc.app.get(TenantAccessResolver), EVALUATE_ACCESS, ttlMs, pubsub).start();
    caches.push(cache);
    await waitFor(async () => cache.status().subscribed, 5000, 10);
    return cache;
  };
  const request = (token: string, tenant?: string) => ({ headers: { authorization: `Bearer ${token}`, ...(tenant ? { 'x-tenant-id': tenant } : {}) } }) as IncomingMessage;
  /** The resolved principal, or the problem's slug. */
  const outcome = async (cache: PrincipalCache, req: IncomingMessage): Promise<TenantPrincipal | string> => {
    try {
      return await cache.resolve(req);
    } catch (err) {
      if (err instanceof ProblemException) return err.problem.slug;
      throw err;
    }
  };
  /** Publishes `marker` on `channel` and resolves once the app's subscriber has delivered it. */
  const heardEverythingSoFar = async <T extends { userId: string }>(channel: Channel<T>, marker: T): Promise<void> => {
    let heard = false;
    const unsubscribe = await pubsub.subscribe(channel, (m) => {
      if (m.userId === marker.userId) heard = true;
    });
    try {
      await pubsub.publish(channel, marker);
      await waitFor(async () => heard, 5000, 5);
    } finally {
      await unsubscribe();
    }
  };
  const clientFor = async (u: SignedUp) => {
    const created = await f.call('POST', '/api/oauth/clients', { token: u.idToken, tenant: u.tenantId, json: { name: 'evaluator', scopes: ['flags:evaluate'] } });
    expect(created.status).toBe(201);
    return created.body as { clientId: string; clientSecret: string };
  };
  const accessToken = async (client: { clientId: string; clientSecret: string }) => {
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }).toString();
    const res = await http(`${f.url}/oauth/token`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(200);
    return res.body.access_token as string;
  };

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    owner = await f.signUp();
    db = new DataSource({ type: 'postgres', url: f.te.env['DATABASE_URL'] });
    await db.initialize();
    pubsub = f.svc.app.get<PubSub>(PUBSUB);
  }, 60_000);
  afterAll(async () => {
    for (const c of caches) c.close();
    await db?.destroy();
    await f?.stop();
  });

  it('keeps a caller: the second request is answered from the cache, not resolved again', async () => {
    const cache = await started(60_000);
    const first = await outcome(cache, request(owner.idToken, owner.tenantId));
    expect(first).toMatchObject({ caller: { callerId: `user:${owner.userId}`, role: 'admin' }, tenant: { id: owner.tenantId } });
    expect(await outcome(cache, request(owner.idToken, owner.tenantId))).toBe(first);
  });

  it('refreshes a busy caller ahead of expiry: no request of theirs waits for the resolver', async () => {
    // 1 s: each entry lives 1 s and is refreshed in the background from 500 ms on (room for a loaded machine).
    const cache = await started(1000);
    const req = request(owner.idToken, owner.tenantId);
    await cache.resolve(req);
    const waited: number[] = [];
    for (let i = 0; i < 60; i++) {
      await new Promise((r) => setTimeout(r, 50));
      // A Promise means this request had to wait for the resolver.
      if (cache.resolve(req) instanceof Promise) waited.push(i);
    }
    expect(waited).toEqual([]);
  });

  it('refuses a removed member at once after the membershipChanged announcement', async () => {
    const cache = await started(60_000);
    const member = await f.addMember(owner, owner.tenantId, `removed-${Date.now()}@flagship.test`, 'viewer');
    // Accepting the invitation announced the new membership; were that message to arrive after the
    // entry below is loaded, it would drop the entry. A marker published now arrives after it (one
    // subscriber connection, in order), so once the marker is heard the add's announcement was too.
    await heardEverythingSoFar(CHANNELS.membershipChanged, { tenantId: owner.tenantId, userId: `marker-${Date.now()}` });
    const req = request(member.idToken, owner.tenantId);
    expect(await outcome(cache, req)).toMatchObject({ caller: { callerId: `user:${member.userId}` } });
    await db.query('DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2', [owner.tenantId, member.userId]);
    // Unannounced, the 60 s entry still answers...
    expect(await outcome(cache, req)).toMatchObject({ caller: { callerId: `user:${member.userId}` } });
    // ...announced, it is refused as soon as the message arrives; the owner's entry stays.
    const ownerEntry = await outcome(cache, request(owner.idToken, owner.tenantId));
    await pubsub.publish(CHANNELS.membershipChanged, { tenantId: owner.tenantId, userId: member.userId });
    await waitFor(async () => (await outcome(cache, req)) === 'tenant-access-denied', 1000, 5);
    expect(await outcome(cache, request(owner.idToken, owner.tenantId))).toBe(ownerEntry);
  });

  it("refuses a revoked client's token at once: deleting the client announces it", async () => {
    const cache = await started(60_000);
    const client = await clientFor(owner);
    const req = request(await accessToken(client));
    expect(await outcome(cache, req)).toMatchObject({ caller: { callerId: `client:${client.clientId}`, tenantId: owner.tenantId } });
    expect((await f.call('DELETE', `/api/oauth/clients/${client.clientId}`, { token: owner.idToken, tenant: owner.tenantId })).status).toBe(204);
    await waitFor(async () => (await outcome(cache, req)) === 'invalid-token', 1000, 5);
  });

  it('drops a tenant\'s callers on tenantChanged: the next request reads the new plan', async () => {
    const cache = await started(60_000);
    const req = request(owner.idToken, owner.tenantId);
    expect(await outcome(cache, req)).toMatchObject({ caller: { plan: 'free' } });
    await db.query(`UPDATE tenants SET plan = 'premium' WHERE id = $1`, [owner.tenantId]);
    expect(await outcome(cache, req)).toMatchObject({ caller: { plan: 'free' } });
    await pubsub.publish(CHANNELS.tenantChanged, { tenantId: owner.tenantId });
    await waitFor(async () => ((await outcome(cache, req)) as TenantPrincipal).caller.plan === 'premium', 1000, 5);
    await db.query(`UPDATE tenants SET plan = 'free' WHERE id = $1`, [owner.tenantId]);
  });

  it('never serves a principal from the cache past its token\'s expiry', async () => {
    const cache = await started(60_000);
    const client = await clientFor(owner);
    // A real token of the app's issuer that expired 5 s ago: the verifier still takes it (30 s clock tolerance).
    const issued = await f.svc.app.get(AccessTokenIssuer).issue(
      { clientId: client.clientId, tenantId: owner.tenantId, scopes: ['flags:evaluate'], productKeys: [] },
      new Date(Date.now() - 3_605_000),
    );
    const req = request(issued.access_token);
    expect(await outcome(cache, req)).toMatchObject({ caller: { plan: 'free' } });
    await db.query(`UPDATE tenants SET plan = 'standard' WHERE id = $1`, [owner.tenantId]);
    // Resolved afresh (within the 60 s the cache would otherwise keep it): the change made meanwhile shows.
    expect(await outcome(cache, req)).toMatchObject({ caller: { plan: 'standard' } });
    await db.query(`UPDATE tenants SET plan = 'free' WHERE id = $1`, [owner.tenantId]);
  });

  it('never keeps a refusal: the request after a change is decided afresh', async () => {
    const cache = await started(60_000);
    const outsider = await f.signUp();
    const req = request(outsider.idToken, owner.tenantId);
    expect(await outcome(cache, req)).toBe('tenant-access-denied');
    await db.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'viewer')`, [owner.tenantId, outsider.userId]);
    expect(await outcome(cache, req)).toMatchObject({ caller: { callerId: `user:${outsider.userId}`, role: 'viewer' } });
  });

  it('a refresh that is refused drops the entry: never served stale after a refusal', async () => {
    // 400 ms: refreshed in the background from 200 ms on.
    const cache = await started(400);
    const member = await f.addMember(owner, owner.tenantId, `stale-${Date.now()}@flagship.test`, 'viewer');
    const req = request(member.idToken, owner.tenantId);
    expect(await outcome(cache, req)).toMatchObject({ caller: { callerId: `user:${member.userId}` } });
    await db.query('DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2', [owner.tenantId, member.userId]);
    const removedAt = Date.now();
    // Refused within the entry's life plus a refresh, and from then on.
    await waitFor(async () => (await outcome(cache, req)) === 'tenant-access-denied', 3000, 20);
    expect(Date.now() - removedAt).toBeLessThan(3000);
    for (let i = 0; i < 5; i++) {
      expect(await outcome(cache, req)).toBe('tenant-access-denied');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
