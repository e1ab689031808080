// Sign-in with IDP_MODE=oidc: the authorization-code flow with PKCE (S256), state and nonce against the
// configured OpenID provider, done by oauth4webapi (discovery, the code exchange and the ID token's
// checks), then the federated sign-in bootstrap. Only the round trip's verifier, state and nonce are
// kept, in sessionStorage, and removed when the answer comes back; no token is put in a URL or a log.
import * as oauth from 'oauth4webapi';
import { request, type Bootstrap } from './api';
import { OidcSignInError, type OidcConfig } from './oidc';

const PENDING = 'flagship.console.oidc-pending';
interface Pending { state: string; nonce: string; codeVerifier: string }

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
/** A provider on this machine (local development, the tests) may speak http; any other must be https. */
const httpOptions = (issuer: URL) => ({ [oauth.allowInsecureRequests]: issuer.protocol === 'http:' && LOOPBACK.has(issuer.hostname) });

async function discover(cfg: OidcConfig): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(cfg.issuer);
  try {
    return await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...httpOptions(issuer) }));
  } catch {
    throw new OidcSignInError(`${cfg.displayName} cannot be reached right now (its OpenID configuration could not be read). Try again in a moment.`);
  }
}

/** Starts a sign-in: the provider's authorization URL, with the round trip's secrets kept in this tab. */
export async function authorizationUrl(cfg: OidcConfig): Promise<URL> {
  const as = await discover(cfg);
  if (!as.authorization_endpoint) throw new OidcSignInError(`${cfg.displayName} has no authorization endpoint.`);
  const pending: Pending = { state: oauth.generateRandomState(), nonce: oauth.generateRandomNonce(), codeVerifier: oauth.generateRandomCodeVerifier() };
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: cfg.clientId,
    redirect_uri: cfg.redirectUri,
    response_type: 'code',
    scope: cfg.scopes.join(' '),
    code_challenge: await oauth.calculatePKCECodeChallenge(pending.codeVerifier),
    code_challenge_method: 'S256',
    state: pending.state,
    nonce: pending.nonce,
  }).toString();
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  return url;
}

/** The round trip's secrets, read once: an answer can be used a single time. */
function takePending(): Pending | null {
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  try {
    return raw ? (JSON.parse(raw) as Pending) : null;
  } catch {
    return null;
  }
}

/**
 * The provider's answer at the callback: checks state (and issuer), exchanges the code with the PKCE
 * verifier, checks the ID token (issuer, audience, expiry, nonce), then the federated bootstrap.
 */
export async function completeSignIn(cfg: OidcConfig, callback: URL): Promise<{ idToken: string; data: Bootstrap['data'] }> {
  const pending = takePending();
  if (!pending) throw new OidcSignInError('This sign-in was not started in this tab, or its answer has been used already. Start again.');
  const as = await discover(cfg);
  const client: oauth.Client = { client_id: cfg.clientId };
  let params: URLSearchParams;
  try {
    params = oauth.validateAuthResponse(as, client, callback, pending.state);
  } catch (e) {
    if (e instanceof oauth.AuthorizationResponseError) {
      throw new OidcSignInError(
        e.error === 'access_denied'
          ? `Sign-in was cancelled or access was denied at ${cfg.displayName}.`
          : `${cfg.displayName} refused the sign-in: ${e.error_description ?? e.error}.`,
      );
    }
    throw new OidcSignInError('The answer does not belong to the sign-in started in this tab (its state or issuer does not match), so it was refused. Start again.');
  }
  let idToken: string | undefined;
  try {
    const res = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, cfg.redirectUri, pending.codeVerifier, httpOptions(new URL(cfg.issuer)));
    idToken = (await oauth.processAuthorizationCodeResponse(as, client, res, { expectedNonce: pending.nonce, requireIdToken: true })).id_token;
  } catch (e) {
    const why = e instanceof oauth.ResponseBodyError ? `: ${e.error_description ?? e.error}` : e instanceof TypeError ? ' (it cannot be reached)' : ' (its ID token did not pass the checks)';
    throw new OidcSignInError(`The sign-in could not be completed with ${cfg.displayName}${why}. Start again.`);
  }
  if (!idToken) throw new OidcSignInError(`${cfg.displayName} sent no ID token.`);
  const boot = await request<Bootstrap>('POST', `/api/v1/auth/signin/${encodeURIComponent(cfg.provider)}`, {}, { idToken, providerName: cfg.providerName });
  return { idToken, data: boot.body.data };
}
