import { generateKeyPairSync } from 'node:crypto';
import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigError, commonEnv, loadConfig, portEnv } from '@flagship/config';
import { DATA_SOURCE } from '@flagship/persistence';
import { PUBSUB } from '@flagship/redis';
import { platformModules } from '@flagship/platform';
import { startTestApp, type RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, type TestEnvironment, waitFor } from '@flagship/testing';
import { decodeProtectedHeader } from 'jose';
import type { DataSource } from 'typeorm';
import { AccessTokenIssuer } from './access-token.issuer';
import { AccessTokenVerifier } from './access-token.verifier';
import { generateSigningKey, jwkThumbprint, parseSigningKey } from './jwk';
import { OAuthModule } from './oauth.module';
import { type OAuthModuleOptions, resolveOAuthOptions, type SecretSource } from './oauth.options';
import { SigningKeyService } from './signing-key.service';
import { SigningKeysRepository } from './signing-keys.repository';
import { VerificationKeys } from './verification-keys';

const ISSUER = 'https://issuer.test';

function oauthApp(env: NodeJS.ProcessEnv, serviceName: string, oauth: OAuthModuleOptions): DynamicModule {
  const config = loadConfig(env, { ...commonEnv, ...portEnv(0) });
  @Module({})
  class KeysProbeModule {}
  return { module: KeysProbeModule, imports: [...platformModules(config, { serviceName }), OAuthModule.forRoot(oauth)] };
}

/** A Secrets-Manager-like source whose value the test rotates. */
class RotatingSecrets implements SecretSource {
  private readonly listeners = new Set<(names: string[]) => void>();
  constructor(private value: string | undefined) {}
  get(name: string): string | undefined {
    return name === 'OAUTH_SIGNING_KEY' ? this.value : undefined;
  }
  onChange(listener: (names: string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  rotate(value: string | undefined, announce = true): void {
    this.value = value;
    if (announce) for (const l of this.listeners) l(['OAUTH_SIGNING_KEY']);
  }
}

const newPem = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const newJwk = () => JSON.stringify(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }));

describe('signing keys (real Postgres and Redis)', () => {
  let te: TestEnvironment;
  const apps: RunningApp[] = [];
  const start = async (name: string, oauth: OAuthModuleOptions) => {
    const app = await startTestApp(oauthApp(te.env, name, oauth));
    apps.push(app);
    return app;
  };
  let ds: DataSource;
  const rows = (): Promise<Array<{ kid: string; has_private: boolean; published: boolean }>> =>
    ds.query(`SELECT kid, private_jwk IS NOT NULL AS has_private, (retired_at IS NULL OR retired_at > now()) AS published FROM signing_keys ORDER BY created_at`);

  beforeAll(async () => {
    te = await createTestEnvironment();
  });

  afterAll(async () => {
    for (const app of apps.reverse()) await app.close();
    await te?.teardown();
  });

  it('three processes starting at once without a configured key end with one generated key', async () => {
    const started = await Promise.all(['a', 'b', 'c'].map((n) => start(`issuer-${n}`, { issuer: ISSUER, issuing: {} })));
    ds = started[0].app.get<DataSource>(DATA_SOURCE);
    const kids = await Promise.all(started.map(async (s) => (await s.app.get(SigningKeyService).current()).kid));
    expect(new Set(kids).size).toBe(1);
    expect(await rows()).toEqual([{ kid: kids[0], has_private: true, published: true }]);

    // Again with nothing published, each process on its own connection pool, at the same instant.
    await ds.query(`UPDATE signing_keys SET retired_at = now() - interval '1 second'`);
    const created = await Promise.all(started.map((s) => s.app.get(SigningKeysRepository).activeGeneratedOrCreate(generateSigningKey, 600)));
    expect(new Set(created.map((k) => k.kid)).size).toBe(1);
    expect((await rows()).filter((r) => r.published)).toEqual([{ kid: created[0].kid, has_private: true, published: true }]);
    for (const s of started) await s.app.get(SigningKeyService).renew();
    expect(new Set(await Promise.all(started.map(async (s) => (await s.app.get(SigningKeyService).current()).kid)))).toEqual(new Set([created[0].kid]));
  });

  describe('a configured key, rotated through the secret store', () => {
    let secrets: RotatingSecrets;
    let issuerApp: RunningApp;
    let verifierApp: RunningApp;
    const firstPem = newPem();

    beforeAll(async () => {
      secrets = new RotatingSecrets(firstPem);
      issuerApp = await start('issuer-configured', { issuer: ISSUER, issuing: { secrets } });
      verifierApp = await start('verifier', { issuer: ISSUER });
    });

    const issue = () => issuerApp.app.get(AccessTokenIssuer).issue({ clientId: 'ffc_k', tenantId: 't', scopes: [], productKeys: [] });

    it('signs with it and publishes only its public half, kid = thumbprint', async () => {
      const token = await issue();
      const kid = parseSigningKey(firstPem, 'OAUTH_SIGNING_KEY').kid;
      expect(decodeProtectedHeader(token.access_token).kid).toBe(kid);
      expect(await rows()).toContainEqual({ kid, has_private: false, published: true });
      const [stored]: Array<{ public_jwk: Record<string, string> }> = await ds.query('SELECT public_jwk FROM signing_keys WHERE kid = $1', [kid]);
      expect(jwkThumbprint(stored.public_jwk as never)).toBe(kid);
      expect(stored.public_jwk).not.toHaveProperty('d');
      await expect(verifierApp.app.get(AccessTokenVerifier).verify(token.access_token)).resolves.toMatchObject({ clientId: 'ffc_k' });
    });

    it('after a rotation the new key signs at once; tokens of the old one still verify, in another app too', async () => {
      const before = await issue();
      const secondJwk = newJwk();
      secrets.rotate(secondJwk, false); // no announcement: the next token notices the new value itself
      const after = await issue();
      const newKid = parseSigningKey(secondJwk, 'OAUTH_SIGNING_KEY').kid;
      expect(decodeProtectedHeader(after.access_token).kid).toBe(newKid);
      const verifier = verifierApp.app.get(AccessTokenVerifier);
      // The other app hears of the new key through Redis (its unknown-kid reload is still cooling down
      // from its start-up load), well before a client could carry the token there.
      const keys = verifierApp.app.get(VerificationKeys);
      await waitFor(async () => keys.published().some((k) => k.kid === newKid), 3000, 5);
      await expect(verifier.verify(after.access_token)).resolves.toBeDefined();
      await expect(verifier.verify(before.access_token)).resolves.toBeDefined();
      const published = verifierApp.app.get(VerificationKeys).published().map((k) => k.kid);
      expect(published).toEqual(expect.arrayContaining([newKid, decodeProtectedHeader(before.access_token).kid]));
    });

    it('an unusable rotated value is refused and the previous key keeps signing', async () => {
      const current = (await issuerApp.app.get(SigningKeyService).current()).kid;
      secrets.rotate('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----');
      const token = await issue();
      expect(decodeProtectedHeader(token.access_token).kid).toBe(current);
    });

    it('a key whose lease ran out is no longer published, and its tokens are refused', async () => {
      const thirdPem = newPem();
      // Unannounced: an announcement starts a renew in the background, which could land after the
      // UPDATE below and extend the lease again (it did under load). The token notices the new value.
      secrets.rotate(thirdPem, false);
      const token = await issue();
      const kid = decodeProtectedHeader(token.access_token).kid as string;
      const keys = verifierApp.app.get(VerificationKeys);
      // The previous test's announced renew may still be in flight, with the same effect: retired until it holds.
      await waitFor(async () => {
        await ds.query(`UPDATE signing_keys SET retired_at = now() - interval '1 second' WHERE kid = $1`, [kid]);
        await keys.refresh();
        return !keys.published().some((k) => k.kid === kid);
      }, 5000, 100);
      expect(keys.published().map((k) => k.kid)).not.toContain(kid);
      await expect(verifierApp.app.get(AccessTokenVerifier).verify(token.access_token)).rejects.toMatchObject({ reason: 'unknown_key' });
      // The signer republishes a configured key when it renews its lease: the secret decides.
      await issuerApp.app.get(SigningKeyService).renew();
      await keys.refresh();
      expect(keys.published().map((k) => k.kid)).toContain(kid);
    });
  });

  it('a generated key someone retired is replaced at the next renewal', async () => {
    const app = apps[0];
    const service = app.app.get(SigningKeyService);
    const old = (await service.current()).kid;
    await ds.query(`UPDATE signing_keys SET retired_at = now() - interval '1 second' WHERE kid = $1`, [old]);
    await service.renew();
    const next = (await service.current()).kid;
    expect(next).not.toBe(old);
    expect(await rows()).toContainEqual({ kid: next, has_private: true, published: true });
  });

  it('refuses to start with an unusable key, or without one when a configured key is required', async () => {
    const app = apps[0].app;
    const build = (secrets: SecretSource | undefined, requireConfiguredKey = false) =>
      new SigningKeyService(
        resolveOAuthOptions({ issuer: ISSUER, issuing: { secrets, requireConfiguredKey } }),
        app.get(SigningKeysRepository),
        app.get(VerificationKeys),
        app.get(PUBSUB),
      );
    const bad = build(new RotatingSecrets('{"kty":"EC","crv":"P-256"}'));
    await expect(bad.onModuleInit()).rejects.toThrow(ConfigError);
    await expect(bad.onModuleInit()).rejects.toThrow(/^invalid configuration: OAUTH_SIGNING_KEY is not a private key/);
    const missing = build(new RotatingSecrets(undefined), true);
    await expect(missing.onModuleInit()).rejects.toThrow('invalid configuration: OAUTH_SIGNING_KEY is required');

    // Required, then gone from the secret store: keeps the configured key, never generates one.
    const secrets = new RotatingSecrets(newPem());
    const required = build(secrets, true);
    await required.onModuleInit();
    const kid = (await required.current()).kid;
    secrets.rotate(undefined);
    expect((await required.current()).kid).toBe(kid);
    expect((await required.current()).configured).toBe(true);
    required.onApplicationShutdown();
  });
});
