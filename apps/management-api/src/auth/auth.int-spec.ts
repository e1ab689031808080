import { decodeJwt } from 'jose';
import { ManagementApiFixture, PLATFORM_ADMIN } from '../testing/management-api.fixture';

describe('sign-in bootstrap and the dev identity provider (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ PLATFORM_ADMIN_EMAILS: `${PLATFORM_ADMIN},root2@flagship.test,root3@flagship.test` });
  });
  afterAll(async () => {
    await f?.stop();
  });

  describe('dev identity provider', () => {
    it('creates accounts, signs in with a password, refuses wrong ones and duplicates', async () => {
      const created = await f.call('POST', '/dev/idp/accounts', { json: { email: 'idp@flagship.test', password: 'long-enough-1', displayName: 'Idp' } });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ idToken: expect.stringMatching(/^eyJ/), uid: expect.any(String) });
      expect((await f.call('POST', '/dev/idp/accounts', { json: { email: 'IDP@flagship.test', password: 'long-enough-1' } })).status).toBe(409);
      const ok = await f.call('POST', '/dev/idp/token', { json: { email: 'idp@flagship.test', password: 'long-enough-1' } });
      expect(ok.status).toBe(200);
      expect(ok.body.uid).toBe(created.body.uid);
      const bad = await f.call('POST', '/dev/idp/token', { json: { email: 'idp@flagship.test', password: 'wrong-password' } });
      expect(bad.status).toBe(401);
      const unknown = await f.call('POST', '/dev/idp/token', { json: { email: 'nobody@flagship.test', password: 'wrong-password' } });
      expect([unknown.status, unknown.body.detail]).toEqual([401, bad.body.detail]);
    });

    it('validates its bodies', async () => {
      const both = await f.call('POST', '/dev/idp/token', { json: { email: 'a@flagship.test', password: 'x', providerName: 'google.com' } });
      expect(both.status).toBe(422);
      const short = await f.call('POST', '/dev/idp/accounts', { json: { email: 'not-an-email', password: 'short', extra: 1 } });
      expect(short.status).toBe(422);
      expect(Object.keys(short.body.errors).sort()).toEqual(['email', 'extra', 'password']);
    });

    it('publishes its keys', async () => {
      const jwks = await f.call('GET', '/dev/idp/.well-known/jwks.json');
      expect(jwks.status).toBe(200);
      expect(jwks.body.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', kid: 'dev-idp-1' });
      expect(jwks.body.keys[0].d).toBeUndefined();
    });
  });

  describe('signup', () => {
    it('creates the user and a personal tenant where they are admin on plan free', async () => {
      const idToken = await f.idToken('ada@flagship.test');
      const res = await f.call('POST', '/api/v1/auth/signup', { json: { idToken, email: 'ada@flagship.test', password: 'correct-horse-1' } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        success: true,
        message: expect.any(String),
        data: {
          user: { uid: expect.any(String), email: 'ada@flagship.test', tenant_id: expect.any(String), role: 'admin' },
          subscription: { plan: 'free', status: 'active', billingCycle: 'monthly' },
          tenants: [{ tenant_id: expect.any(String), tenant_name: expect.any(String), role: 'admin' }],
          active_tenant_id: res.body.data.canonical_tenant_id,
          active_tenant_role: 'admin',
          canonical_tenant_id: res.body.data.tenants[0].tenant_id,
          canonical_role: 'admin',
        },
      });
      const again = await f.call('POST', '/api/v1/auth/signup', { json: { idToken, email: 'ada@flagship.test', password: 'correct-horse-1' } });
      expect(again.status).toBe(409);
    });

    it('422 for a short password, a bad e-mail, or an e-mail unlike the token', async () => {
      const idToken = await f.idToken('bob@flagship.test');
      const short = await f.call('POST', '/api/v1/auth/signup', { json: { idToken, email: 'bob@flagship.test', password: 'short' } });
      expect(short.status).toBe(422);
      expect(short.body.errors).toEqual({ password: 'must be at least 8 characters' });
      const badEmail = await f.call('POST', '/api/v1/auth/signup', { json: { idToken, email: 'bob-at-example', password: 'long-enough' } });
      expect(badEmail.body.errors).toEqual({ email: 'must be a valid e-mail address' });
      const other = await f.call('POST', '/api/v1/auth/signup', { json: { idToken, email: 'carol@flagship.test', password: 'long-enough' } });
      expect([other.status, other.body.errors]).toEqual([422, { email: "does not match the ID token's e-mail" }]);
    });

    it('401 for a token that is not from the identity provider', async () => {
      const idToken = await f.idToken('dan@flagship.test');
      const [h, p] = idToken.split('.');
      const forged = `${h}.${p}.${'A'.repeat(86)}`;
      const res = await f.call('POST', '/api/v1/auth/signup', { json: { idToken: forged, email: 'dan@flagship.test', password: 'long-enough' } });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
    });

    it('400 for malformed JSON, 415 for a form body, 422 for wrong types', async () => {
      const malformed = await f.call('POST', '/api/v1/auth/signup', { headers: { 'content-type': 'application/json' } });
      expect([400, 422]).toContain(malformed.status);
      const res = await fetch(`${f.url}/api/v1/auth/login`, { method: 'POST', body: 'idToken=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(res.status).toBe(415);
      const types = await f.call('POST', '/api/v1/auth/login', { json: { idToken: 42 } });
      expect(types.status).toBe(422);
      expect(types.body.errors.idToken).toBeDefined();
    });
  });

  describe('login', () => {
    it('answers the bootstrap for a signed-up user and 404 otherwise', async () => {
      const u = await f.signUp();
      const ok = await f.call('POST', '/api/v1/auth/login', { json: { idToken: u.idToken } });
      expect(ok.status).toBe(200);
      expect(ok.body.data.user.uid).toBe(u.userId);
      const stranger = await f.idToken('stranger@flagship.test');
      const missing = await f.call('POST', '/api/v1/auth/login', { json: { idToken: stranger } });
      expect(missing.status).toBe(404);
    });

    it('makes X-Tenant-ID active when the user is a member, else the canonical tenant', async () => {
      const owner = await f.signUp();
      const second = await f.call('POST', '/api/tenants', { token: owner.idToken, json: { name: 'Second', primaryEmail: owner.email } });
      expect(second.status).toBe(201);
      const chosen = await f.call('POST', '/api/v1/auth/login', { json: { idToken: owner.idToken }, tenant: second.body.id });
      expect(chosen.body.data.active_tenant_id).toBe(second.body.id);
      expect(chosen.body.data.canonical_tenant_id).toBe(owner.tenantId);
      const foreign = await f.signUp();
      const notMine = await f.call('POST', '/api/v1/auth/login', { json: { idToken: owner.idToken }, tenant: foreign.tenantId });
      expect(notMine.body.data.active_tenant_id).toBe(owner.tenantId);
    });
  });

  describe('federated sign-in', () => {
    const federated = async (email: string, providerName: string) =>
      (await f.call('POST', '/dev/idp/token', { json: { email, providerName } })).body.idToken as string;

    it('creates the user on first sign-in and finds them after', async () => {
      const idToken = await federated('gina@flagship.test', 'google.com');
      const first = await f.call('POST', '/api/v1/auth/signin/google', { json: { idToken, providerName: 'google.com' } });
      expect(first.status).toBe(200);
      expect(first.body.data.user.email).toBe('gina@flagship.test');
      const second = await f.call('POST', '/api/v1/auth/signin/google', { json: { idToken, providerName: 'google' } });
      expect(second.status).toBe(200);
      expect(second.body.data.user.uid).toBe(first.body.data.user.uid);
    });

    it('refuses a provider unlike the token (401), the segment (422), or an unknown segment (404)', async () => {
      const idToken = await federated('hal@flagship.test', 'github.com');
      const mismatch = await f.call('POST', '/api/v1/auth/signin/google', { json: { idToken, providerName: 'google.com' } });
      expect(mismatch.status).toBe(401);
      const wrongSegment = await f.call('POST', '/api/v1/auth/signin/google', { json: { idToken, providerName: 'github.com' } });
      expect([wrongSegment.status, Object.keys(wrongSegment.body.errors)]).toEqual([422, ['providerName']]);
      const unknown = await f.call('POST', '/api/v1/auth/signin/myspace', { json: { idToken, providerName: 'myspace' } });
      expect(unknown.status).toBe(404);
      for (const segment of ['github', 'microsoft', 'apple', 'oidc', 'saml']) {
        const name = segment === 'oidc' || segment === 'saml' ? `${segment}.acme` : `${segment}.com`;
        const token = await federated(`${segment}@flagship.test`, name);
        expect((await f.call('POST', `/api/v1/auth/signin/${segment}`, { json: { idToken: token, providerName: name } })).status).toBe(200);
      }
    });
  });

  describe('email_verified', () => {
    const unverifiedAccount = async (email: string) => {
      const res = await f.call('POST', '/dev/idp/accounts', { json: { email, password: 'correct-horse-1', emailVerified: false } });
      expect(res.status).toBe(201);
      return res.body as { idToken: string; uid: string };
    };

    it('the dev identity provider issues unverified tokens on request (accounts keep it; default verified)', async () => {
      const account = await unverifiedAccount('unverified-idp@flagship.test');
      expect(decodeJwt(account.idToken).email_verified).toBe(false);
      const again = await f.call('POST', '/dev/idp/token', { json: { email: 'unverified-idp@flagship.test', password: 'correct-horse-1' } });
      expect(decodeJwt(again.body.idToken).email_verified).toBe(false);
      expect(decodeJwt(await f.idToken('verified-idp@flagship.test')).email_verified).toBe(true);
      const federated = await f.call('POST', '/dev/idp/token', { json: { email: 'fed-unverified@flagship.test', providerName: 'github.com', emailVerified: false } });
      expect(decodeJwt(federated.body.idToken).email_verified).toBe(false);
      const mixed = await f.call('POST', '/dev/idp/token', { json: { email: 'unverified-idp@flagship.test', password: 'correct-horse-1', emailVerified: true } });
      expect([mixed.status, Object.keys(mixed.body.errors)]).toEqual([422, ['emailVerified']]);
      expect((await f.call('POST', '/dev/idp/accounts', { json: { email: 'x@flagship.test', password: 'correct-horse-1', emailVerified: 'no' } })).status).toBe(422);
    });

    it('an unverified e-mail cannot sign up (the platform admin\'s least of all): 403 email-not-verified, no user made', async () => {
      for (const email of ['nobody-checked@flagship.test', 'root3@flagship.test']) {
        const { idToken } = await unverifiedAccount(email);
        const res = await f.call('POST', '/api/v1/auth/signup', { json: { idToken, email, password: 'correct-horse-1' } });
        expect([res.status, res.body.type]).toEqual([403, '/problems/email-not-verified']);
        expect(res.headers.get('content-type')).toMatch(/problem\+json/);
        expect((await f.call('POST', '/api/v1/auth/login', { json: { idToken } })).status).toBe(404);
        expect((await f.call('GET', '/admin/users', { token: idToken })).status).toBe(401);
      }
      const federated = (await f.call('POST', '/dev/idp/token', { json: { email: 'fed-nobody@flagship.test', providerName: 'google.com', emailVerified: false } })).body.idToken;
      const signin = await f.call('POST', '/api/v1/auth/signin/google', { json: { idToken: federated, providerName: 'google.com' } });
      expect([signin.status, signin.body.type]).toEqual([403, '/problems/email-not-verified']);
    });

    it("a federated identity has its own subject: another provider with the admin's e-mail never becomes the admin", async () => {
      const root = await f.signUp(PLATFORM_ADMIN);
      expect((await f.call('GET', '/admin/users', { token: root.idToken })).status).toBe(200);
      for (const emailVerified of [false, true]) {
        const token = await f.call('POST', '/dev/idp/token', { json: { email: PLATFORM_ADMIN, providerName: 'github.com', emailVerified } });
        expect(decodeJwt(token.body.idToken).sub).not.toBe(decodeJwt(root.idToken).sub);
        // Not the admin's user: refused as someone who never signed up, and cannot take the e-mail over.
        expect((await f.call('GET', '/admin/users', { token: token.body.idToken })).status).toBe(401);
        const signin = await f.call('POST', '/api/v1/auth/signin/github', { json: { idToken: token.body.idToken, providerName: 'github.com' } });
        expect(signin.status).toBe(emailVerified ? 409 : 403);
      }
      // Same provider and e-mail: the same subject each time.
      const a = await f.call('POST', '/dev/idp/token', { json: { email: 'same@flagship.test', providerName: 'google.com' } });
      const b = await f.call('POST', '/dev/idp/token', { json: { email: 'SAME@flagship.test', providerName: 'google' } });
      expect(decodeJwt(a.body.idToken).sub).toBe(decodeJwt(b.body.idToken).sub);
    });

    it('a user whose token no longer vouches for the e-mail is not a platform admin, though the e-mail is listed', async () => {
      // A user row from before e-mails were checked: the platform admin's address, bound to an unverified identity.
      const { idToken, uid } = await unverifiedAccount('legacy-root@flagship.test');
      await f.sql(`INSERT INTO users (idp_subject, email) VALUES ($1, $2)`, [uid, 'ROOT2@flagship.test']);
      const res = await f.call('GET', '/admin/users', { token: idToken });
      expect([res.status, res.body.type]).toEqual([403, '/problems/platform-admin-required']);
    });
  });

  describe('forgot-password', () => {
    it('answers 202 the same way whether or not the account exists', async () => {
      const u = await f.signUp();
      const known = await f.call('POST', '/api/v1/auth/forgot-password', { json: { email: u.email } });
      const unknown = await f.call('POST', '/api/v1/auth/forgot-password', { json: { email: 'ghost@flagship.test' } });
      expect(known.status).toBe(202);
      expect(unknown.status).toBe(202);
      expect(unknown.body).toEqual(known.body);
      expect((await f.call('POST', '/api/v1/auth/forgot-password', { json: { email: 'nope' } })).status).toBe(422);
    });
  });

  describe('bearer tokens on protected routes', () => {
    it('401 with a challenge without a token, with garbage, or before sign-up', async () => {
      const none = await f.call('GET', '/api/tenants');
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await f.call('GET', '/api/tenants', { token: 'not.a.jwt' })).status).toBe(401);
      const notSignedUp = await f.idToken('late@flagship.test');
      const res = await f.call('GET', '/api/tenants', { token: notSignedUp });
      expect([res.status, res.body.type]).toEqual([401, '/problems/not-signed-up']);
    });
  });
});
