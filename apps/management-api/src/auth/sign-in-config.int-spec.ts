import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { ManagementApiFixture } from '../testing/management-api.fixture';
import { CONSOLE_CSP } from '../console/console-static';
import { loadManagementApiConfig } from '../env.schema';

// How the console learns to sign in (GET /api/v1/auth/config), and what oidc mode changes: the
// console's CSP lets the browser reach the provider's origin and no other, and ID tokens issued to
// the console's client (aud = IDP_CLIENT_ID) are accepted by the federated sign-in bootstrap.
/** The one line management-api stops with at start-up for `env`, or undefined when it starts. */
function refusal(env: NodeJS.ProcessEnv): string | undefined {
  try {
    loadManagementApiConfig(env);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('sign-in config', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'console-oidc-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>Flagship console</title>');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describe('dev mode', () => {
    let f: ManagementApiFixture;
    beforeAll(async () => {
      f = await ManagementApiFixture.start({ CONSOLE_DIR: dir });
    });
    afterAll(() => f.stop());

    it('answers mode dev and nothing else; the CSP names no other origin', async () => {
      const res = await f.call('GET', '/api/v1/auth/config');
      expect([res.status, res.body]).toEqual([200, { mode: 'dev' }]);
      const page = await f.call('GET', '/console/');
      expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(CONSOLE_CSP).toContain("connect-src 'self';");
    });
  });

  describe('oidc mode', () => {
    let f: ManagementApiFixture;
    let idp: Server;
    let issuer: string;
    let sign: (claims: Record<string, unknown>) => Promise<string>;

    beforeAll(async () => {
      // A provider's JWKS on loopback: the verifier fetches it as it would Google's or Okta's.
      const { publicKey, privateKey } = await generateKeyPair('RS256');
      const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
      idp = createServer((req, res) => {
        if (req.url !== '/jwks') return res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
      });
      await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
      issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}/realms/acme`;
      sign = (claims) =>
        new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setIssuedAt().setExpirationTime('5m').sign(privateKey);
      f = await ManagementApiFixture.start({
        IDP_MODE: 'oidc',
        IDP_ISSUER: issuer,
        IDP_JWKS_URI: `${issuer.replace('/realms/acme', '')}/jwks`,
        IDP_CLIENT_ID: 'flagship-console',
        IDP_PROVIDER_NAME: 'oidc.acme',
        IDP_DISPLAY_NAME: 'Acme ID',
        CONSOLE_DIR: dir,
      });
    });
    afterAll(async () => {
      await f?.stop();
      await new Promise((r) => idp?.close(r));
    });

    it('tells the console the provider, its public client, the scopes, the redirect URI and the bootstrap route', async () => {
      const res = await f.call('GET', '/api/v1/auth/config');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        mode: 'oidc',
        issuer,
        clientId: 'flagship-console',
        scopes: ['openid', 'email', 'profile'],
        redirectUri: `${f.url}/console/auth/callback`,
        provider: 'oidc',
        providerName: 'oidc.acme',
        displayName: 'Acme ID',
      });
    });

    it("lets the console's browser reach the provider's origin, and only that origin", async () => {
      const res = await f.call('GET', '/console/');
      expect(res.status).toBe(200);
      const csp = res.headers.get('content-security-policy') ?? '';
      const connect = csp.split('; ').find((d) => d.startsWith('connect-src'));
      expect(connect).toBe(`connect-src 'self' ${new URL(issuer).origin}`);
      // Everything else as strict as in dev mode.
      expect(csp.replace(` ${new URL(issuer).origin}`, '')).toBe(CONSOLE_CSP);
    });

    it("accepts an ID token issued to the console's client at the federated sign-in bootstrap, refuses another audience", async () => {
      const idToken = await sign({ sub: 'acme-1', email: 'oidc-user@flagship.test', email_verified: true, name: 'Oidc User', aud: 'flagship-console' });
      const res = await f.call('POST', '/api/v1/auth/signin/oidc', { json: { idToken, providerName: 'oidc.acme' } });
      expect(res.status).toBe(200);
      expect(res.body.data.user.email).toBe('oidc-user@flagship.test');
      const stranger = await sign({ sub: 'acme-2', email: 'other@flagship.test', email_verified: true, aud: 'another-client' });
      expect((await f.call('POST', '/api/v1/auth/signin/oidc', { json: { idToken: stranger, providerName: 'oidc.acme' } })).status).toBe(401);
    });

    it('refuses a first sign-in whose e-mail the provider has not verified (false, absent, or the string "true"): 403 email-not-verified, no user made', async () => {
      for (const [sub, verified] of [['acme-u1', false], ['acme-u2', undefined], ['acme-u3', 'true']] as const) {
        const idToken = await sign({ sub, email: 'root@flagship.test', ...(verified === undefined ? {} : { email_verified: verified }), aud: 'flagship-console' });
        const res = await f.call('POST', '/api/v1/auth/signin/oidc', { json: { idToken, providerName: 'oidc.acme' } });
        expect([res.status, res.body.type]).toEqual([403, '/problems/email-not-verified']);
        expect((await f.call('GET', '/api/tenants', { token: idToken })).status).toBe(401);
      }
      // The owner of the address, verified, still gets it.
      const owner = await sign({ sub: 'acme-root', email: 'root@flagship.test', email_verified: true, aud: 'flagship-console' });
      expect((await f.call('POST', '/api/v1/auth/signin/oidc', { json: { idToken: owner, providerName: 'oidc.acme' } })).status).toBe(200);
    });
  });

  it('refuses at start-up a provider name that no sign-in route accepts, or an issuer that is no URL', () => {
    const base = { DATABASE_URL: 'postgres://x/y', REDIS_URL: 'redis://x', IDP_MODE: 'oidc', IDP_ISSUER: 'https://id.example.com', IDP_JWKS_URI: 'https://id.example.com/jwks' };
    expect(() => loadManagementApiConfig({ ...base, IDP_PROVIDER_NAME: 'myspace' })).toThrow(/IDP_PROVIDER_NAME/);
    expect(() => loadManagementApiConfig({ ...base, IDP_ISSUER: 'id.example.com' })).toThrow(/IDP_ISSUER/);
    expect(loadManagementApiConfig({ ...base, IDP_CLIENT_ID: 'console' }).idpAudiences).toEqual(['flagship-dev', 'console']);
  });

  it('refuses IDP_MODE=dev at a public PUBLIC_BASE_URL (an ingress) in one line, unless IDP_DEV_ALLOW_PUBLIC=true', () => {
    const dev = { DATABASE_URL: 'postgres://x/y', REDIS_URL: 'redis://x', NODE_ENV: 'development', IDP_MODE: 'dev' };
    for (const publicUrl of ['https://api.dev.flagship.example.com', 'http://10.0.0.5:3000', 'http://0.0.0.0:3000', 'http://127.0.0.1.nip.io:3000']) {
      const message = refusal({ ...dev, PUBLIC_BASE_URL: publicUrl });
      expect([publicUrl, message]).toEqual([publicUrl, expect.stringMatching(/^invalid configuration: IDP_MODE=dev \(the embedded identity provider\) is refused at PUBLIC_BASE_URL .*not a loopback address/)]);
      expect(message).not.toContain('\n');
    }
    // Loopback addresses (npm start, the tests, compose's localhost) and the default (HOST:PORT) start.
    for (const publicUrl of ['http://127.0.0.1:3000', 'http://localhost:3000', 'http://[::1]:3000', '']) {
      expect([publicUrl, refusal({ ...dev, PUBLIC_BASE_URL: publicUrl })]).toEqual([publicUrl, undefined]);
    }
    expect(refusal({ ...dev, PUBLIC_BASE_URL: 'https://api.dev.flagship.example.com', IDP_DEV_ALLOW_PUBLIC: 'true' })).toBeUndefined();
    expect(refusal({ ...dev, IDP_MODE: 'oidc', IDP_ISSUER: 'https://id.example.com', IDP_JWKS_URI: 'https://id.example.com/jwks', PUBLIC_BASE_URL: 'https://api.example.com' })).toBeUndefined();
  });

  it('refuses IDP_MODE=dev while HOST listens beyond loopback, even at a loopback PUBLIC_BASE_URL, in one line, unless opted in', () => {
    const dev = { DATABASE_URL: 'postgres://x/y', REDIS_URL: 'redis://x', NODE_ENV: 'development', IDP_MODE: 'dev', PUBLIC_BASE_URL: 'http://localhost:3000' };
    for (const host of ['0.0.0.0', '::', '192.168.1.20', '10.0.0.5', 'example.test', '']) {
      const message = refusal({ ...dev, HOST: host });
      expect([host, message]).toEqual([host, `invalid configuration: IDP_MODE=dev (the embedded identity provider) is refused while HOST=${host} listens beyond loopback; set HOST=127.0.0.1, use IDP_MODE=oidc, or IDP_DEV_ALLOW_NON_LOOPBACK_HOST=true where only this machine reaches the port (a container published on 127.0.0.1)`]);
    }
    for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', '::1']) expect([host, refusal({ ...dev, HOST: host })]).toEqual([host, undefined]);
    // The default HOST is loopback; a container published only on the host's loopback opts in; a private network's opt-in covers it.
    expect(refusal(dev)).toBeUndefined();
    expect(refusal({ ...dev, HOST: '0.0.0.0', IDP_DEV_ALLOW_NON_LOOPBACK_HOST: 'true' })).toBeUndefined();
    expect(refusal({ ...dev, HOST: '0.0.0.0', IDP_DEV_ALLOW_PUBLIC: 'true' })).toBeUndefined();
    // The narrower opt-in does not allow a public address.
    expect(refusal({ ...dev, HOST: '0.0.0.0', IDP_DEV_ALLOW_NON_LOOPBACK_HOST: 'true', PUBLIC_BASE_URL: 'https://api.example.com' })).toMatch(/PUBLIC_BASE_URL/);
    expect(refusal({ ...dev, HOST: '0.0.0.0', IDP_MODE: 'oidc', IDP_ISSUER: 'https://id.example.com', IDP_JWKS_URI: 'https://id.example.com/jwks' })).toBeUndefined();
  });
});
