import { Controller, type DynamicModule, Get, Module, UseGuards } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oauth from 'oauth4webapi';
import type { DataSource } from 'typeorm';
import { commonEnv, loadConfig, portEnv } from '@flagship/config';
import { AccessTokenVerifier, type ClientPrincipal, ClientTokenGuard, OAuthModule, Principal, PUBLIC_ROUTE } from '@flagship/oauth';
import { DATA_SOURCE } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { platformModules } from '@flagship/platform';
import { bootstrapService, buildOpenApiDocument, encodeCursor, startTestApp, type RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, freePort, http, type HttpResult, type TestEnvironment, waitFor } from '@flagship/testing';
import { clientTokenAdapter } from './client-token.adapter';
import { OAuthClientsService, type OAuthClientWithSecret } from './oauth-clients.service';
import { OAUTH_FEATURE_ENTITIES, OAuthFeatureModule } from './oauth-feature.module';
import { OAuthMetadataController } from './oauth-metadata.controller';
import { OAuthTokenController } from './oauth-token.controller';

@Controller('probe')
@UseGuards(ClientTokenGuard)
class ProbeController {
  @Get()
  whoami(@Principal() principal: ClientPrincipal): ClientPrincipal {
    return principal;
  }
}

/** management-api as far as OAuth goes: the feature module on the platform, at a known address. */
function managementModule(env: NodeJS.ProcessEnv, baseUrl: string): DynamicModule {
  const config = loadConfig(env, { ...commonEnv, ...portEnv(0) });
  @Module({ controllers: [ProbeController] })
  class ManagementLikeModule {}
  return {
    module: ManagementLikeModule,
    imports: [
      ...platformModules(config, { serviceName: 'management-api', entities: OAUTH_FEATURE_ENTITIES }),
      OAuthFeatureModule.forRoot({ oauth: { issuer: baseUrl, issuing: {} }, publicBaseUrl: baseUrl }),
    ],
  };
}

/** Another app (the AI gateway's role): verifies only, shares only Postgres and Redis. */
function gatewayModule(env: NodeJS.ProcessEnv, issuer: string): DynamicModule {
  const config = loadConfig(env, { ...commonEnv, ...portEnv(0) });
  @Module({ controllers: [ProbeController] })
  class GatewayLikeModule {}
  return { module: GatewayLikeModule, imports: [...platformModules(config, { serviceName: 'ai-gateway' }), OAuthModule.forRoot({ issuer })] };
}

const insecure = { [oauth.allowInsecureRequests]: true } as const;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('OAuth in management-api (real Postgres, Redis, HTTP; oauth4webapi as the client)', () => {
  let te: TestEnvironment;
  let baseUrl: string;
  let management: NestExpressApplication;
  let gateway: RunningApp;
  let clients: OAuthClientsService;
  let tenantId: string;
  let otherTenantId: string;
  let userId: string;
  let as: oauth.AuthorizationServer;

  beforeAll(async () => {
    te = await createTestEnvironment();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    management = await bootstrapService(managementModule(te.env, baseUrl), { port, host: '127.0.0.1', handleSignals: false });
    gateway = await startTestApp(gatewayModule(te.env, baseUrl));
    clients = management.get(OAuthClientsService);
    const ds = management.get<DataSource>(DATA_SOURCE);
    [{ id: tenantId }] = await ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
    [{ id: otherTenantId }] = await ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('Other', 'ops@other.test') RETURNING id`);
    [{ id: userId }] = await ds.query(`INSERT INTO users (idp_subject, email) VALUES ('sub-admin', 'admin@acme.test') RETURNING id`);
  });

  afterAll(async () => {
    await gateway?.close();
    await management?.close();
    await te?.teardown();
  });

  const newClient = (scopes = ['flags:read', 'flags:evaluate'], productKeys = ['core']): Promise<OAuthClientWithSecret> =>
    clients.create(tenantId, userId, { name: 'backend', scopes, productKeys }, false);
  const postToken = (body: string, headers: Record<string, string> = {}): Promise<HttpResult<any>> =>
    http(`${baseUrl}/oauth/token`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
  const probe = (url: string, token: string) => http(`${url}/probe`, { headers: { authorization: `Bearer ${token}` } });
  const expectOAuthError = (res: HttpResult<any>, status: number, error: string) => {
    expect({ status: res.status, body: res.body }).toEqual({ status, body: { error, error_description: expect.any(String) } });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('cache-control')).toBe('no-store');
  };

  it('publishes RFC 8414 metadata that oauth4webapi discovers', async () => {
    const response = await oauth.discoveryRequest(new URL(baseUrl), { algorithm: 'oauth2', ...insecure });
    as = await oauth.processDiscoveryResponse(new URL(baseUrl), response);
    expect(as).toEqual({
      issuer: baseUrl,
      token_endpoint: `${baseUrl}/oauth/token`,
      jwks_uri: `${baseUrl}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: ['flags:read', 'flags:write', 'flags:evaluate', 'projects:read', 'projects:write', 'ai:invoke'],
      response_types_supported: [],
    });
    const jwks = await http(`${baseUrl}/.well-known/jwks.json`);
    expect(jwks.headers.get('cache-control')).toBe('public, max-age=60');
    expect(jwks.body.keys).toEqual([expect.objectContaining({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: expect.any(String) })]);
    expect(jwks.body.keys[0]).not.toHaveProperty('d');
  });

  it('documents its routes in OpenAPI (form body, OAuth error bodies)', () => {
    const doc = buildOpenApiDocument(management, { title: 't', description: 'd', version: '1' });
    const token = doc.paths['/oauth/token'].post!;
    expect(Object.keys((token.requestBody as { content: object }).content)).toEqual(['application/x-www-form-urlencoded']);
    expect(Object.keys(token.responses).sort()).toEqual(['200', '400', '401', '413', '415', '429', '503']);
    // RFC 6749 bodies for the token endpoint's own refusals; problem details for what comes before it.
    const body = (status: string) => (token.responses[status] as { content: Record<string, { schema: { $ref: string } }> }).content;
    expect(body('400')['application/json']!.schema.$ref).toBe('#/components/schemas/OAuthErrorDto');
    expect(body('401')['application/json']!.schema.$ref).toBe('#/components/schemas/OAuthErrorDto');
    expect(body('415')['application/problem+json']!.schema.$ref).toBe('#/components/schemas/Problem');
    expect(token.security).toEqual([]);
    expect(doc.paths['/.well-known/jwks.json'].get).toBeDefined();
    expect(doc.paths['/.well-known/oauth-authorization-server'].get).toBeDefined();
  });

  it('serves the authentication resolver through its ClientTokenPort (the one verifier): ours by iss, a caller context and the expiry, or a 401 problem', async () => {
    const port = clientTokenAdapter(management.get(AccessTokenVerifier));
    const client = await newClient(['flags:read']);
    const creds = form({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
    const token = (await postToken(creds)).body.access_token as string;
    expect(port.isAccessToken(token)).toBe(true);
    expect(port.isAccessToken('not.a.jwt')).toBe(false);
    const [h, p, sig] = token.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { exp: number };
    const foreign = `${h}.${Buffer.from(JSON.stringify({ ...claims, iss: 'https://idp.example' })).toString('base64url')}.${sig}`;
    expect(port.isAccessToken(foreign)).toBe(false);
    await expect(port.verify(token)).resolves.toEqual({ caller: { kind: 'client', callerId: `client:${client.clientId}`, tenantId, scopes: ['flags:read'] }, expiresAt: claims.exp * 1000 });
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, scope: 'flags:write' })).toString('base64url')}.${sig}`;
    const refused = await port.verify(tampered).catch((err: unknown) => err as ProblemException);
    expect(refused).toBeInstanceOf(ProblemException);
    expect(refused).toMatchObject({ problem: { slug: 'invalid-token', status: 401 } });
    expect((refused as ProblemException).headers['WWW-Authenticate']).toMatch(/error="invalid_token"/);
  });

  it('marks the token endpoint and discovery documents public, for the global auth guard', () => {
    expect(Reflect.getMetadata(PUBLIC_ROUTE, OAuthTokenController.prototype.token)).toBe(true);
    expect(Reflect.getMetadata(PUBLIC_ROUTE, OAuthMetadataController)).toBe(true);
  });

  it.each([
    ['client_secret_post', (secret: string) => oauth.ClientSecretPost(secret), 'flags:read'],
    ['client_secret_basic', (secret: string) => oauth.ClientSecretBasic(secret), undefined],
  ])('oauth4webapi gets a token with %s that verifies against the JWKS and in every app', async (_method, auth, scope) => {
    const client = await newClient(['flags:read', 'flags:evaluate'], ['core']);
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      { client_id: client.clientId },
      auth(client.clientSecret),
      scope ? { scope } : {},
      insecure,
    );
    const token = await oauth.processClientCredentialsResponse(as, { client_id: client.clientId }, response);
    expect(token).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: scope ?? 'flags:read flags:evaluate' });

    const jwks = createRemoteJWKSet(new URL(as.jwks_uri!));
    const { payload, protectedHeader } = await jwtVerify(token.access_token, jwks, { issuer: baseUrl, audience: 'flagship-api', algorithms: ['ES256'] });
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt', kid: expect.any(String) });
    expect(payload).toMatchObject({
      iss: baseUrl,
      aud: 'flagship-api',
      sub: client.clientId,
      client_id: client.clientId,
      tenant_id: tenantId,
      scope: scope ?? 'flags:read flags:evaluate',
      product_keys: ['core'],
      jti: expect.any(String),
    });
    expect((payload.exp as number) - (payload.iat as number)).toBe(3600);

    for (const verifier of [management.get(AccessTokenVerifier), gateway.app.get(AccessTokenVerifier)]) {
      await expect(verifier.verify(token.access_token)).resolves.toMatchObject({ clientId: client.clientId, tenantId });
    }
    expect((await probe(gateway.url, token.access_token)).status).toBe(200);
  });

  it('answers success with Cache-Control: no-store and ignores unknown form fields', async () => {
    const client = await newClient();
    const res = await postToken(form({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, audience: 'x', resource: 'y' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, scope: 'flags:read flags:evaluate' });
    expect(decodeProtectedHeader(res.body.access_token).alg).toBe('ES256');
  });

  it('refuses a JSON body with 415 problem details', async () => {
    const res = await http(`${baseUrl}/oauth/token`, { method: 'POST', json: { grant_type: 'client_credentials' } });
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.headers.get('accept')).toBe('application/x-www-form-urlencoded');
  });

  it('refuses another grant type, missing and repeated fields, and both auth methods at once', async () => {
    const client = await newClient();
    const creds = { client_id: client.clientId, client_secret: client.clientSecret };
    expectOAuthError(await postToken(form({ grant_type: 'password', ...creds, username: 'a', password: 'b' })), 400, 'unsupported_grant_type');
    expectOAuthError(await postToken(form(creds)), 400, 'invalid_request');
    expectOAuthError(await postToken(''), 400, 'invalid_request');
    expectOAuthError(await postToken(`grant_type=client_credentials&client_id=${client.clientId}&client_id=x&client_secret=s`), 400, 'invalid_request');
    expectOAuthError(await postToken(form({ grant_type: 'client_credentials', client_secret: client.clientSecret })), 400, 'invalid_request');
    expectOAuthError(await postToken(form({ grant_type: 'client_credentials', client_id: client.clientId })), 401, 'invalid_client');
    const both = await postToken(form({ grant_type: 'client_credentials', ...creds }), { authorization: basic(client.clientId, client.clientSecret) });
    expectOAuthError(both, 400, 'invalid_request');
  });

  it('refuses a wrong secret and an unknown client alike: 401 invalid_client, Basic challenge only for Basic, same scrypt time', async () => {
    const client = await newClient();
    const wrongPost = await postToken(form({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: 'ffs_wrong' }));
    expectOAuthError(wrongPost, 401, 'invalid_client');
    expect(wrongPost.headers.get('www-authenticate')).toBeNull();
    const wrongBasic = await postToken(form({ grant_type: 'client_credentials' }), { authorization: basic(client.clientId, 'ffs_wrong') });
    expectOAuthError(wrongBasic, 401, 'invalid_client');
    expect(wrongBasic.headers.get('www-authenticate')).toMatch(/^Basic realm="flagship"/);
    const unknown = await postToken(form({ grant_type: 'client_credentials', client_id: 'ffc_000000000000000000000x', client_secret: 'ffs_wrong' }));
    expectOAuthError(unknown, 401, 'invalid_client');
    expect(unknown.body).toEqual(wrongPost.body);

    // Timing: an unknown client spends a scrypt too. Medians, loose bounds: the machine is shared.
    const time = async (clientId: string) => {
      const samples: number[] = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        await postToken(form({ grant_type: 'client_credentials', client_id: clientId, client_secret: 'ffs_wrong' }));
        samples.push(performance.now() - t0);
      }
      return samples.sort((a, b) => a - b)[2];
    };
    const [known, missing] = [await time(client.clientId), await time('ffc_000000000000000000000x')];
    expect(missing).toBeGreaterThan(10);
    expect(missing / known).toBeGreaterThan(0.33);
    expect(missing / known).toBeLessThan(3);
  });

  it('oauth4webapi surfaces our RFC 6749 errors', async () => {
    const client = await newClient();
    const response = await oauth.clientCredentialsGrantRequest(as, { client_id: client.clientId }, oauth.ClientSecretPost('ffs_wrong'), {}, insecure);
    await expect(oauth.processClientCredentialsResponse(as, { client_id: client.clientId }, response)).rejects.toMatchObject({
      error: 'invalid_client',
      status: 401,
    });
  });

  it('refuses a scope outside the client’s with invalid_scope; grants a subset', async () => {
    const client = await newClient(['flags:read']);
    const creds = { grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret };
    expectOAuthError(await postToken(form({ ...creds, scope: 'flags:read flags:write' })), 400, 'invalid_scope');
    expectOAuthError(await postToken(form({ ...creds, scope: 'admin' })), 400, 'invalid_scope');
    const ok = await postToken(form({ ...creds, scope: 'flags:read' }));
    expect(ok.body.scope).toBe('flags:read');
  });

  it('after a rotation the old secret is refused and the new one works', async () => {
    const client = await newClient();
    const rotated = await clients.rotateSecret(tenantId, client.clientId);
    const creds = (secret: string) => form({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: secret });
    expectOAuthError(await postToken(creds(client.clientSecret)), 401, 'invalid_client');
    expect((await postToken(creds(rotated.clientSecret))).status).toBe(200);
  });

  it('lists the tenant’s clients by pages from Postgres, never secrets; another tenant sees none and gets 404s', async () => {
    const mine = await Promise.all([newClient(), newClient(), newClient()]);
    const all = await clients.list(tenantId, { limit: 1000 });
    expect(all.map((c) => c.clientId)).toEqual(expect.arrayContaining(mine.map((c) => c.clientId)));
    expect(JSON.stringify(all)).not.toMatch(/ffs_|scrypt/);
    // Code-unit order, as the repository's COLLATE "C" (localeCompare would put 'a' before 'F').
    const byUnits = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
    const sorted = [...all].sort((a, b) => byUnits(a.createdAt, b.createdAt) || byUnits(a.clientId, b.clientId));
    expect(all).toEqual(sorted);
    const page1 = await clients.list(tenantId, { limit: 2 });
    const page2 = await clients.list(tenantId, { limit: 2, cursor: encodeCursor({ at: page1[1].createdAt, id: page1[1].clientId }) });
    expect(page1).toHaveLength(3);
    expect([...page1.slice(0, 2), ...page2].map((c) => c.clientId)).toEqual(all.slice(0, 2 + page2.length).map((c) => c.clientId));
    expect(await clients.list(otherTenantId, { limit: 10 })).toEqual([]);
    await expect(clients.delete(otherTenantId, mine[0].clientId)).rejects.toMatchObject({ problem: { status: 404 } });
    await expect(clients.rotateSecret(otherTenantId, mine[0].clientId)).rejects.toMatchObject({ problem: { status: 404 } });
  });

  it('deleting a client refuses its tokens in every app within 5 s, and it gets no new ones', async () => {
    const client = await newClient();
    const creds = form({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
    const token = (await postToken(creds)).body.access_token as string;
    expect((await probe(baseUrl, token)).status).toBe(200);
    expect((await probe(gateway.url, token)).status).toBe(200);

    const t0 = Date.now();
    await clients.delete(tenantId, client.clientId);
    const refusedIn = (url: string) => waitFor(async () => ((await probe(url, token)).status === 401 ? Date.now() - t0 : undefined), 5000, 10);
    const [inManagement, inGateway] = await Promise.all([refusedIn(baseUrl), refusedIn(gateway.url)]);
    expect(inManagement).toBeLessThan(5000);
    expect(inGateway).toBeLessThan(5000);
    console.log(`deleted client's token refused by management-api after ${inManagement} ms, by the other app after ${inGateway} ms`);
    const refused = await probe(gateway.url, token);
    expect(refused.body).toMatchObject({ type: '/problems/invalid-token', detail: 'The access token has been revoked.' });
    expectOAuthError(await postToken(creds), 401, 'invalid_client');
  });
});
