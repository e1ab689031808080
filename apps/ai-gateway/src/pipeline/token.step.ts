import type { IncomingHttpHeaders } from 'node:http';
import { AI_INVOKE_SCOPE } from '@flagship/domain';
import { type AccessTokenVerifier, type ClientPrincipal, InvalidTokenError, bearerTokenOf } from '@flagship/oauth';
import { GatewayError } from '../gateway.errors';

/** Enough for every live client's token many times over; the map is cleared when it grows past this. */
const MAX_CACHED = 50_000;

/**
 * Step 1: the bearer token, a client-credentials access token of this service (issuer and audience
 * from OAUTH_ISSUER / OAUTH_AUDIENCE), through libs/oauth's verifier. ES256 verification is slow next
 * to a map lookup, so a token is verified once and its principal cached until its `exp`; revocation
 * is still checked on every request, against the verifier's in-memory revocation set (fed by the
 * `client-revoked` channel), which costs no I/O. A valid token without the `ai:invoke` scope is
 * refused with 403 `insufficient_scope`: a client made for flags must not spend the tenant's credits.
 */
export class TokenStep {
  private readonly cache = new Map<string, ClientPrincipal>();

  constructor(private readonly verifier: AccessTokenVerifier) {}

  async verify(headers: IncomingHttpHeaders): Promise<ClientPrincipal> {
    const known = this.cached(headers);
    if (known !== undefined) return known;
    const token = bearerTokenOf({ headers })!;
    this.cache.delete(token);
    let principal: ClientPrincipal;
    try {
      principal = await this.verifier.verify(token);
    } catch (err) {
      if (err instanceof InvalidTokenError) throw refused(err.message);
      throw err;
    }
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(token, principal);
    return scoped(principal);
  }

  /**
   * verify() without I/O: the principal of a token verified before and not yet expired (revocation
   * and scope checked now), undefined when the token must be verified; throws the refusals it can
   * tell at once (no token, revoked, no scope).
   */
  cached(headers: IncomingHttpHeaders): ClientPrincipal | undefined {
    const token = bearerTokenOf({ headers });
    if (token === undefined) throw refused('Send Authorization: Bearer <access token from /oauth/token>.');
    const principal = this.cache.get(token);
    if (principal === undefined || principal.expiresAt.getTime() <= Date.now()) return undefined;
    try {
      this.verifier.assertNotRevoked(principal);
    } catch (err) {
      if (err instanceof InvalidTokenError) throw refused(err.message);
      throw err;
    }
    return scoped(principal);
  }
}

function scoped(principal: ClientPrincipal): ClientPrincipal {
  if (!principal.scopes.includes(AI_INVOKE_SCOPE)) throw insufficientScope();
  return principal;
}

const refused = (message: string): GatewayError => new GatewayError(401, 'invalid_token', message, null, { 'www-authenticate': 'Bearer' });

// Not a 401: a new token for the same client cannot fix it, only a client with the scope can.
const insufficientScope = (): GatewayError =>
  new GatewayError(
    403,
    'insufficient_scope',
    `This access token lacks the ${AI_INVOKE_SCOPE} scope that the AI gateway requires; use an OAuth client created with ${AI_INVOKE_SCOPE} and a token that includes it.`,
  );
