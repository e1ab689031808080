import { type DynamicModule, Module } from '@nestjs/common';
import Redis from 'ioredis';
import { commonEnv, loadConfig, portEnv } from '@flagship/config';
import { DATA_SOURCE } from '@flagship/persistence';
import { CHANNELS, PUBSUB, type PubSub, RedisKeys } from '@flagship/redis';
import { platformModules } from '@flagship/platform';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { createTestEnvironment, TcpProxy, type TestEnvironment, waitFor } from '@flagship/testing';
import { decodeProtectedHeader } from 'jose';
import type { DataSource } from 'typeorm';
import { AccessTokenIssuer } from './access-token.issuer';
import { AccessTokenVerifier } from './access-token.verifier';
import { ClientRevocations } from './client-revocations';
import { OAuthModule } from './oauth.module';
import type { OAuthModuleOptions } from './oauth.options';
import { VerificationKeys } from './verification-keys';

// Redis reconnections take seconds (ioredis backs off up to 2 s between attempts).
jest.setTimeout(60_000);

const ISSUER = 'https://issuer.test';

function oauthApp(env: NodeJS.ProcessEnv, serviceName: string, oauth: OAuthModuleOptions): DynamicModule {
  const config = loadConfig(env, { ...commonEnv, ...portEnv(0) });
  @Module({})
  class VerifierProbeModule {}
  return { module: VerifierProbeModule, imports: [...platformModules(config, { serviceName }), OAuthModule.forRoot(oauth)] };
}

/**
 * A verifier's revocations and keys (each one SubscribedCache value) while its own Redis or Postgres,
 * behind TCP proxies of this test, drops out: an issuer app, connected directly, signs and revokes.
 */
describe('a verifier\'s revocations and keys through outages (real Postgres and Redis)', () => {
  let te: TestEnvironment;
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let issuerApp: RunningApp;
  let verifierApp: RunningApp;

  beforeAll(async () => {
    te = await createTestEnvironment();
    pgProxy = await TcpProxy.start(te.db.url);
    redisProxy = await TcpProxy.start(te.redis.url);
    issuerApp = await startTestApp(oauthApp(te.env, 'issuer', { issuer: ISSUER, issuing: {} }));
    // Polls and sweeps far apart: what arrives sooner came another way.
    verifierApp = await startTestApp(
      oauthApp(
        { ...te.env, DATABASE_URL: pgProxy.rewrite(te.db.url), REDIS_URL: redisProxy.rewrite(te.redis.url) },
        'verifier',
        { issuer: ISSUER, revocationPollMs: 60_000, revocationDbSweepMs: 600_000, keyRefreshCooldownMs: 600_000 },
      ),
    );
  });

  afterEach(async () => {
    await pgProxy.restore();
    await redisProxy.restore();
    await waitFor(async () => verifierApp.app.get<PubSub>(PUBSUB).subscriberStatus === 'ready', 15_000, 20);
  });

  afterAll(async () => {
    await verifierApp?.close();
    await issuerApp?.close();
    await pgProxy?.stop();
    await redisProxy?.stop();
    await te?.teardown();
  });

  const issue = async (clientId: string) =>
    (await issuerApp.app.get(AccessTokenIssuer).issue({ clientId, tenantId: 't', scopes: [], productKeys: [] })).access_token;

  it('a revocation announced while the verifier was cut off from Redis is read as soon as it reconnects, not at the next poll', async () => {
    const verifier = verifierApp.app.get(AccessTokenVerifier);
    const token = await issue('ffc_missed');
    await expect(verifier.verify(token)).resolves.toMatchObject({ clientId: 'ffc_missed' });
    const subscriber = verifierApp.app.get<PubSub>(PUBSUB);

    await redisProxy.cut();
    await waitFor(async () => subscriber.subscriberStatus !== 'ready');
    // Recorded and announced by the issuer; the verifier hears nothing.
    await issuerApp.app.get(ClientRevocations).revoke('ffc_missed');
    await expect(verifier.verify(token)).resolves.toBeDefined();
    await redisProxy.restore();
    // The poll is a minute away: only the reconnect's reconcile can bring it this soon.
    await waitFor(async () => verifier.verify(token).then(() => false, () => true), 15_000, 20);
    await expect(verifier.verify(token)).rejects.toMatchObject({ reason: 'revoked' });
  });

  it('an announcement reaches a verifier whose Postgres is down, and isRevoked never waits for I/O', async () => {
    const verifier = verifierApp.app.get(AccessTokenVerifier);
    const token = await issue('ffc_pg_down');
    await expect(verifier.verify(token)).resolves.toBeDefined();
    await pgProxy.cut();
    await issuerApp.app.get(ClientRevocations).revoke('ffc_pg_down');
    await waitFor(async () => verifier.verify(token).then(() => false, () => true), 5000, 10);
    await expect(verifier.verify(token)).rejects.toMatchObject({ reason: 'revoked' });
  });

  it('started while its Redis connection is still being made: the revocations recorded in Redis are held from the first request, not a retry later', async () => {
    const clientId = 'ffc_recorded_before_start';
    // Recorded in Redis only (as management-api does before it marks the client deleted).
    await issuerApp.app.get(ClientRevocations).revoke(clientId);
    const issuedBefore = Math.floor(Date.now() / 1000) - 1;
    const slowRedis = await TcpProxy.start(te.redis.url);
    // Connections are accepted but carry nothing until restored: the client is connecting, not ready.
    slowRedis.stall();
    const restoring = new Promise((resolve) => setTimeout(resolve, 300)).then(() => slowRedis.restore());
    const late = await startTestApp(
      oauthApp({ ...te.env, REDIS_URL: slowRedis.rewrite(te.redis.url) }, 'connecting-verifier', { issuer: ISSUER, revocationPollMs: 60_000, revocationDbSweepMs: 600_000 }),
    );
    try {
      await restoring;
      expect(late.app.get(ClientRevocations).isRevoked(clientId, issuedBefore)).toBe(true);
    } finally {
      await late.close();
      await slowRedis.stop();
    }
  });

  it('started while its Redis is down: the deletions swept from Postgres apply at once, announcements once Redis returns', async () => {
    const ds = issuerApp.app.get<DataSource>(DATA_SOURCE);
    const [{ id: tenantId }] = await ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('Sweep', 'ops@sweep.test') RETURNING id`);
    await ds.query(`INSERT INTO oauth_clients (tenant_id, client_id, name, secret_hash, deleted_at) VALUES ($1, 'ffc_swept', 'gone', 'x', now())`, [tenantId]);
    const issuedBefore = Math.floor(Date.now() / 1000) - 1;
    const ownRedis = await TcpProxy.start(te.redis.url);
    await ownRedis.cut();
    const late = await startTestApp(
      oauthApp({ ...te.env, REDIS_URL: ownRedis.rewrite(te.redis.url) }, 'late-verifier', { issuer: ISSUER, revocationPollMs: 60_000, revocationDbSweepMs: 600_000 }),
    );
    try {
      const revocations = late.app.get(ClientRevocations);
      expect(revocations.isRevoked('ffc_swept', issuedBefore)).toBe(true);
      expect(revocations.isRevoked('ffc_announced', issuedBefore)).toBe(false);
      await ownRedis.restore();
      await waitFor(async () => late.app.get<PubSub>(PUBSUB).subscriberStatus === 'ready', 15_000, 20);
      // Subscribed again (PubSub resubscribes on ready); an announcement now arrives at once.
      await waitFor(async () => {
        await issuerApp.app.get(ClientRevocations).revoke('ffc_announced');
        return revocations.isRevoked('ffc_announced', issuedBefore);
      }, 15_000, 100);
    } finally {
      await late.close();
      await ownRedis.stop();
    }
  });

  it('a rotation announced while Postgres stalls: the keys known verify at once, from memory, while the re-read waits', async () => {
    const verifier = verifierApp.app.get(AccessTokenVerifier);
    const keys = verifierApp.app.get(VerificationKeys);
    const before = await issue('ffc_rotation');
    await expect(verifier.verify(before)).resolves.toBeDefined();

    pgProxy.stall();
    // Counted before the announcement: the re-read it starts may begin as soon as it is published.
    const loads = keys.loads;
    // A rotation: the announcement makes the verifier re-read the keys, which hangs.
    const publisher = new Redis(te.redis.url);
    try {
      await publisher.publish(new RedisKeys(te.redis.prefix).channel(CHANNELS.signingKeysChanged.name), JSON.stringify({}));
    } finally {
      publisher.disconnect();
    }
    // Heard within moments on loopback (a message carries no receipt to wait for).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const t0 = Date.now();
    // Still verifying with the key it knows, from memory: the re-read the first one starts waits on Postgres.
    for (let i = 0; i < 5; i++) await expect(verifier.verify(before)).resolves.toBeDefined();
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(keys.loads).toBe(loads + 1);
    expect(keys.published().map((k) => k.kid)).toContain(decodeProtectedHeader(before).kid);
    await pgProxy.restore();
    await waitFor(async () => verifier.verify(before).then(() => true, () => false), 15_000, 50);
  });
});
