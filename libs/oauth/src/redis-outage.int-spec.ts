import { type DynamicModule, Module } from '@nestjs/common';
import { commonEnv, loadConfig, portEnv } from '@flagship/config';
import { platformModules } from '@flagship/platform';
import { startTestApp, type RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, DisposableRedis, type TestEnvironment, waitFor } from '@flagship/testing';
import { AccessTokenIssuer } from './access-token.issuer';
import { AccessTokenVerifier } from './access-token.verifier';
import { ClientRevocations, RevocationUnavailableError } from './client-revocations';
import { OAuthModule } from './oauth.module';

/** A Redis of this file's own, stopped and started again while the app runs. */
describe('access tokens while Redis is down (real Postgres, a disposable redis-server)', () => {
  let redis: DisposableRedis;
  let te: TestEnvironment;
  let svc: RunningApp;

  beforeAll(async () => {
    redis = await DisposableRedis.start();
    te = await createTestEnvironment({ REDIS_URL: redis.url });
    const config = loadConfig(te.env, { ...commonEnv, ...portEnv(0) });
    @Module({})
    class OutageProbeModule {}
    const module: DynamicModule = {
      module: OutageProbeModule,
      imports: [...platformModules(config, { serviceName: 'outage' }), OAuthModule.forRoot({ issuer: 'https://issuer.test', issuing: {}, revocationPollMs: 200 })],
    };
    svc = await startTestApp(module);
  });

  afterAll(async () => {
    await svc?.close();
    await redis?.stop();
    await te?.teardown();
  });

  it('verifies without Redis, refuses to record a revocation it cannot share, and catches up when Redis returns', async () => {
    const issuer = svc.app.get(AccessTokenIssuer);
    const verifier = svc.app.get(AccessTokenVerifier);
    const revocations = svc.app.get(ClientRevocations);
    const token = (await issuer.issue({ clientId: 'ffc_outage', tenantId: 't', scopes: [], productKeys: [] })).access_token;

    await redis.stop();
    // No round trip per token: verification goes on from memory.
    await expect(verifier.verify(token)).resolves.toMatchObject({ clientId: 'ffc_outage' });
    await expect(revocations.revoke('ffc_outage')).rejects.toBeInstanceOf(RevocationUnavailableError);
    await expect(verifier.verify(token)).resolves.toBeDefined();

    await redis.start();
    await waitFor(async () => {
      try {
        await revocations.revoke('ffc_outage');
        return true;
      } catch {
        return false;
      }
    }, 10000, 100);
    await expect(verifier.verify(token)).rejects.toMatchObject({ reason: 'revoked' });
  });
});
