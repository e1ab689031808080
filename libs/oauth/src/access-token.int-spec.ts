import { createPublicKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { Controller, type DynamicModule, Get, Module, UseGuards } from '@nestjs/common';
import Redis from 'ioredis';
import { base64url, decodeProtectedHeader, SignJWT } from 'jose';
import { commonEnv, loadConfig, portEnv } from '@flagship/config';
import { DATA_SOURCE } from '@flagship/persistence';
import { RedisKeys } from '@flagship/redis';
import { platformModules } from '@flagship/platform';
import { startTestApp, type RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, http, waitFor, type TestEnvironment } from '@flagship/testing';
import type { DataSource } from 'typeorm';
import { AccessTokenIssuer } from './access-token.issuer';
import { AccessTokenVerifier, verifyBearer } from './access-token.verifier';
import type { ClientPrincipal } from './client-principal';
import { ClientRevocations } from './client-revocations';
import { ClientTokenGuard, Principal, Public, RequireScopes, ScopesGuard } from './client-token.guard';
import { OAuthModule } from './oauth.module';
import type { InvalidTokenReason } from './oauth.errors';
import type { OAuthModuleOptions } from './oauth.options';
import { SigningKeyService } from './signing-key.service';
import { VerificationKeys } from './verification-keys';

const ISSUER = 'https://issuer.test';
const AUDIENCE = 'flagship-api';

@Controller('probe')
@UseGuards(ClientTokenGuard, ScopesGuard)
class ProbeController {
  @Get()
  whoami(@Principal() principal: ClientPrincipal): ClientPrincipal {
    return principal;
  }

  @Get('write')
  @RequireScopes('flags:write')
  write(): { ok: true } {
    return { ok: true };
  }

  @Get('open')
  @Public()
  open(): { open: true } {
    return { open: true };
  }
}

function probeApp(env: NodeJS.ProcessEnv, serviceName: string, oauth: OAuthModuleOptions): DynamicModule {
  const config = loadConfig(env, { ...commonEnv, ...portEnv(0) });
  @Module({ controllers: [ProbeController] })
  class ProbeModule {}
  return { module: ProbeModule, imports: [...platformModules(config, { serviceName }), OAuthModule.forRoot(oauth)] };
}

const newClientId = () => `ffc_${randomBytes(12).toString('hex')}`;

/**
 * Two apps in one process, as two deployments would be: `issuer` (management-api's role: signs,
 * generated dev key) and `gateway` (verifies only). They share the file's Postgres database and
 * Redis prefix, and nothing else.
 */
describe('access tokens across apps (real Postgres, Redis and HTTP)', () => {
  let te: TestEnvironment;
  let issuerApp: RunningApp;
  let gatewayApp: RunningApp;
  let issuer: AccessTokenIssuer;
  let gatewayVerifier: AccessTokenVerifier;
  let issuerVerifier: AccessTokenVerifier;
  let signingKey: { kid: string; privateKey: KeyObject };
  let tenantId: string;

  beforeAll(async () => {
    te = await createTestEnvironment();
    issuerApp = await startTestApp(
      probeApp(te.env, 'oauth-issuer', { issuer: ISSUER, audience: AUDIENCE, issuing: {}, revocationPollMs: 500 }),
    );
    gatewayApp = await startTestApp(
      probeApp(te.env, 'oauth-gateway', { issuer: ISSUER, audience: AUDIENCE, revocationPollMs: 500, revocationDbSweepMs: 500 }),
    );
    issuer = issuerApp.app.get(AccessTokenIssuer);
    issuerVerifier = issuerApp.app.get(AccessTokenVerifier);
    gatewayVerifier = gatewayApp.app.get(AccessTokenVerifier);
    signingKey = await issuerApp.app.get(SigningKeyService).current();
    const ds = issuerApp.app.get<DataSource>(DATA_SOURCE);
    [{ id: tenantId }] = await ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
  });

  afterAll(async () => {
    await gatewayApp?.close();
    await issuerApp?.close();
    await te?.teardown();
  });

  const issue = (clientId: string, scopes = ['flags:read'], productKeys = ['core']) => issuer.issue({ clientId, tenantId, scopes, productKeys });
  const probe = (app: RunningApp, token: string | undefined, path = '/probe') =>
    http(`${app.url}${path}`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

  /** A token with our claims, changed as the attack needs, signed however the attack signs. */
  async function forge(
    change: Record<string, unknown> = {},
    how: { key?: KeyObject | Uint8Array; alg?: string; kid?: string; typ?: string | null } = {},
  ): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const clientId = newClientId();
    const payload = {
      iss: ISSUER,
      aud: AUDIENCE,
      sub: clientId,
      client_id: clientId,
      tenant_id: tenantId,
      scope: 'flags:read',
      product_keys: ['core'],
      jti: randomBytes(8).toString('hex'),
      iat: now,
      exp: now + 600,
      ...change,
    };
    const header = { alg: how.alg ?? 'ES256', kid: how.kid ?? signingKey.kid, ...(how.typ === null ? {} : { typ: how.typ ?? 'at+jwt' }) };
    return new SignJWT(payload).setProtectedHeader(header).sign(how.key ?? signingKey.privateKey);
  }

  it('issues ES256 tokens with kid and the contract claims, accepted by both apps', async () => {
    const clientId = newClientId();
    const res = await issue(clientId, ['flags:read', 'flags:evaluate'], ['core', 'insights']);
    expect(res).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'flags:read flags:evaluate' });
    expect(decodeProtectedHeader(res.access_token)).toEqual({ alg: 'ES256', kid: signingKey.kid, typ: 'at+jwt' });

    for (const verifier of [issuerVerifier, gatewayVerifier]) {
      const p = await verifier.verify(res.access_token);
      expect(p).toMatchObject({ clientId, tenantId, scopes: ['flags:read', 'flags:evaluate'], productKeys: ['core', 'insights'] });
      expect(p.expiresAt.getTime() - p.issuedAt * 1000).toBe(3600_000);
    }
    const viaHttp = await probe(gatewayApp, res.access_token);
    expect(viaHttp.status).toBe(200);
    expect(viaHttp.body).toMatchObject({ clientId, tenantId, jti: expect.any(String) });
    expect(gatewayVerifier.isOwnToken(res.access_token)).toBe(true);
    await expect(verifyBearer({ headers: { authorization: `Bearer ${res.access_token}` } }, gatewayVerifier)).resolves.toMatchObject({ clientId });
  });

  it('publishes the signing key in every app through Postgres', () => {
    expect(gatewayApp.app.get(VerificationKeys).published()).toEqual([
      expect.objectContaining({ kid: signingKey.kid, kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' }),
    ]);
    expect(JSON.stringify(gatewayApp.app.get(VerificationKeys).published())).not.toMatch(/"d"/);
  });

  it('answers 401 problems with a Bearer challenge; public routes pass', async () => {
    const none = await probe(gatewayApp, undefined);
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(none.body).toMatchObject({ type: '/problems/invalid-token', status: 401 });
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="flagship"');
    const basic = await http(`${gatewayApp.url}/probe`, { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    expect(basic.status).toBe(401);
    expect((await probe(gatewayApp, undefined, '/probe/open')).status).toBe(200);
    await expect(verifyBearer({ headers: {} }, gatewayVerifier)).rejects.toMatchObject({ reason: 'missing' });
  });

  it('enforces scopes with 403 insufficient-scope', async () => {
    const reader = await issue(newClientId(), ['flags:read']);
    const denied = await probe(gatewayApp, reader.access_token, '/probe/write');
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ type: '/problems/insufficient-scope', requiredScopes: ['flags:write'] });
    expect(denied.headers.get('www-authenticate')).toBe('Bearer realm="flagship", error="insufficient_scope", scope="flags:write"');
    const writer = await issue(newClientId(), ['flags:read', 'flags:write']);
    expect((await probe(gatewayApp, writer.access_token, '/probe/write')).status).toBe(200);
  });

  const attacker = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const attackerRsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const publicPem = () => createPublicKey(signingKey.privateKey).export({ type: 'spki', format: 'pem' }).toString();
  const publicJwkJson = () => JSON.stringify(createPublicKey(signingKey.privateKey).export({ format: 'jwk' }));
  const b64 = (v: unknown) => base64url.encode(JSON.stringify(v));

  const attacks: Array<[string, () => Promise<string>, InvalidTokenReason]> = [
    [
      'alg none',
      async () => {
        const genuine = await forge();
        const [, payload] = genuine.split('.');
        return `${b64({ alg: 'none', typ: 'at+jwt', kid: signingKey.kid })}.${payload}.`;
      },
      'algorithm',
    ],
    ['HS256 keyed with the public key PEM', async () => forge({}, { alg: 'HS256', key: new TextEncoder().encode(publicPem()) }), 'algorithm'],
    ['HS256 keyed with the public JWK', async () => forge({}, { alg: 'HS256', key: new TextEncoder().encode(publicJwkJson()) }), 'algorithm'],
    ['RS256 with a key of its own under our kid', async () => forge({}, { alg: 'RS256', key: attackerRsa }), 'algorithm'],
    ['ES256 by another key under our kid', async () => forge({}, { key: attacker }), 'signature'],
    ['an unknown kid', async () => forge({}, { key: attacker, kid: 'not-ours' }), 'unknown_key'],
    ['expired (beyond the clock tolerance)', async () => forge({ iat: Math.floor(Date.now() / 1000) - 4000, exp: Math.floor(Date.now() / 1000) - 60 }), 'expired'],
    ['not valid yet (nbf)', async () => forge({ nbf: Math.floor(Date.now() / 1000) + 600 }), 'not_yet_valid'],
    ['a wrong audience', async () => forge({ aud: 'someone-else' }), 'wrong_audience'],
    ['a wrong issuer', async () => forge({ iss: 'https://evil.test' }), 'wrong_issuer'],
    [
      'a tampered payload (scope raised)',
      async () => {
        const [h, p, s] = (await forge()).split('.');
        const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
        return `${h}.${b64({ ...claims, scope: 'flags:read flags:write' })}.${s}`;
      },
      'signature',
    ],
    ['no typ (not an access token)', async () => forge({}, { typ: null }), 'wrong_type'],
    ['an ID-token typ', async () => forge({}, { typ: 'JWT' }), 'wrong_type'],
    ['no tenant_id', async () => forge({ tenant_id: undefined }), 'claims'],
    ['no exp', async () => forge({ exp: undefined }), 'claims'],
    ['garbage', async () => 'abc.def.ghi', 'malformed'],
  ];

  it.each(attacks)('refuses %s, in the verifier and through the passport guard', async (_name, make, reason) => {
    const token = await make();
    const refusal = await gatewayVerifier.verify(token).then(
      () => undefined,
      (err: unknown) => err as Error & { reason?: string },
    );
    expect(refusal).toMatchObject({ name: 'InvalidTokenError', reason });
    const res = await probe(gatewayApp, token);
    expect(res.status).toBe(401);
    // Both paths refuse for the same reason, not merely both refuse.
    expect(res.body).toMatchObject({ type: '/problems/invalid-token', status: 401, detail: refusal!.message });
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="flagship", error="invalid_token"/);
    expect(res.text).not.toContain(token.slice(0, 30));
  });

  it('a revoked client is refused by every app within 5 s (pub/sub), tokens issued after the revocation pass', async () => {
    const clientId = newClientId();
    const token = (await issue(clientId)).access_token;
    expect((await probe(issuerApp, token)).status).toBe(200);
    expect((await probe(gatewayApp, token)).status).toBe(200);

    const revokedAt = Date.now();
    await issuerApp.app.get(ClientRevocations).revoke(clientId, revokedAt);
    const refusedIn = async (app: RunningApp) =>
      waitFor(async () => ((await probe(app, token)).status === 401 ? Date.now() - revokedAt : undefined), 5000, 10);
    const [inIssuer, inGateway] = await Promise.all([refusedIn(issuerApp), refusedIn(gatewayApp)]);
    expect(inIssuer).toBeLessThan(5000);
    expect(inGateway).toBeLessThan(5000);
    await expect(gatewayVerifier.verify(token)).rejects.toMatchObject({ reason: 'revoked' });
    console.log(`revocation seen by the issuer app after ${inIssuer} ms, by the other app after ${inGateway} ms`);

    const later = await forge({ sub: clientId, client_id: clientId, iat: Math.floor(revokedAt / 1000) + 1 });
    await expect(gatewayVerifier.verify(later)).resolves.toMatchObject({ clientId });
  });

  it('a revocation whose announcement was lost arrives through the sorted-set poll', async () => {
    const clientId = newClientId();
    const token = (await issue(clientId)).access_token;
    await gatewayVerifier.verify(token);
    const redis = new Redis(te.redis.url);
    try {
      await redis.zadd(new RedisKeys(te.redis.prefix).key('oauth', 'revoked-clients'), Date.now(), clientId);
    } finally {
      redis.disconnect();
    }
    const t0 = Date.now();
    await waitFor(async () => gatewayVerifier.verify(token).then(() => false, () => true), 5000, 20);
    const after = Date.now() - t0;
    // revocationPollMs 500: the set is read at least that often.
    expect(after).toBeLessThan(2000);
    console.log(`a revocation without its announcement seen after ${after} ms (poll every 500 ms)`);
  });

  it('a deletion Redis never heard of arrives through the oauth_clients sweep', async () => {
    const clientId = newClientId();
    const token = (await issue(clientId)).access_token;
    await gatewayVerifier.verify(token);
    const ds = gatewayApp.app.get<DataSource>(DATA_SOURCE);
    await ds.query(
      `INSERT INTO oauth_clients (tenant_id, client_id, name, secret_hash, deleted_at) VALUES ($1, $2, 'gone', 'x', now())`,
      [tenantId, clientId],
    );
    await waitFor(async () => gatewayVerifier.verify(token).then(() => false, () => true), 5000, 20);
  });

  it('a flood of unknown kids costs Postgres at most one load per cooldown', async () => {
    const keys = gatewayApp.app.get(VerificationKeys);
    const before = keys.loads;
    const t0 = Date.now();
    let refused = 0;
    while (Date.now() - t0 < 1500) {
      const tokens = await Promise.all(Array.from({ length: 20 }, () => forge({}, { key: attacker, kid: randomBytes(8).toString('hex') })));
      const results = await Promise.allSettled(tokens.map((t) => gatewayVerifier.verify(t)));
      refused += results.filter((r) => r.status === 'rejected').length;
    }
    expect(refused).toBeGreaterThan(100);
    // Default cooldown 5 s: one load for the whole burst (two if it straddled a periodic reload).
    expect(keys.loads - before).toBeLessThanOrEqual(2);
  });
});
