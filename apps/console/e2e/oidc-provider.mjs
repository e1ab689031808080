// A real OpenID provider (the `oidc-provider` package, certified) for the console's OIDC sign-in test,
// on loopback. It is ESM-only, so the test starts it as its own process. One public client, PKCE
// required, redirect URI = the console's callback; its development login page accepts any login
// (the account's id), and findAccount gives it an e-mail, which the sign-in bootstrap needs.
// Env: PORT, CLIENT_ID, REDIRECT_URI. Prints `ready <issuer>` when it listens.
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

const { PORT, CLIENT_ID, REDIRECT_URI } = process.env;
const issuer = `http://127.0.0.1:${PORT}`;
const consoleOrigin = new URL(REDIRECT_URI).origin;

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signingKey = { ...(await exportJWK(privateKey)), kid: 'e2e-rs256', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: CLIENT_ID,
      token_endpoint_auth_method: 'none',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    },
  ],
  pkce: { required: () => true },
  jwks: { keys: [signingKey] },
  cookies: { keys: ['oidc-e2e-cookie-key'] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // The e-mail in the ID token itself (the bootstrap reads it there), not only at userinfo.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  // The browser calls the token endpoint from the console's origin, and from no other.
  clientBasedCORS: (_ctx, origin) => origin === consoleOrigin,
  findAccount: (_ctx, id) => ({
    accountId: id,
    claims: () => ({ sub: id, email: id.includes('@') ? id : `${id}@flagship.test`, email_verified: true, name: id.split('@')[0] }),
  }),
});
// Development-only features and defaults are on by design here: keep their warnings out of the test's output.
provider.on('server_error', (_ctx, err) => console.error('oidc-provider server_error', err));

provider.listen(Number(PORT), '127.0.0.1', () => console.log(`ready ${issuer}`));
process.on('SIGTERM', () => process.exit(0));
