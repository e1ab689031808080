import type { KeyObject } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { decodeJwt, errors, jwtVerify, type CompactJWSHeaderParameters } from 'jose';
import { ClientRevocations } from './client-revocations';
import { type ClientPrincipal, principalFromClaims } from './client-principal';
import { InvalidTokenError } from './oauth.errors';
import { ACCESS_TOKEN_ALG, ACCESS_TOKEN_TYP, OAUTH_OPTIONS, type ResolvedOAuthOptions } from './oauth.options';
import { VerificationKeys } from './verification-keys';

/** Longer than any token we issue; refused before any parsing. */
const MAX_TOKEN_LENGTH = 4096;

/** The bearer token of a request (RFC 6750 section 2.1), or undefined when it sends none. */
export function bearerTokenOf(req: Pick<Request, 'headers'>): string | undefined {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
  return match ? match[1] : undefined;
}

/** Maps jose's failures to a reason and a message safe to show. */
function toInvalidTokenError(err: unknown): InvalidTokenError {
  if (err instanceof InvalidTokenError) return err;
  if (err instanceof errors.JWTExpired) return new InvalidTokenError('expired', 'The access token has expired.');
  if (err instanceof errors.JOSEAlgNotAllowed) return new InvalidTokenError('algorithm', `The access token must be signed with ${ACCESS_TOKEN_ALG}.`);
  if (err instanceof errors.JWSSignatureVerificationFailed) return new InvalidTokenError('signature', 'The access token signature is invalid.');
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'iss':
        return new InvalidTokenError('wrong_issuer', 'The access token was not issued by this service.');
      case 'aud':
        return new InvalidTokenError('wrong_audience', 'The access token is not meant for this service.');
      case 'nbf':
        return new InvalidTokenError('not_yet_valid', 'The access token is not valid yet.');
      case 'typ':
        return new InvalidTokenError('wrong_type', 'The token is not an access token.');
      default:
        return new InvalidTokenError('claims', `The access token's ${err.claim} claim is missing or invalid.`);
    }
  }
  return new InvalidTokenError('malformed', 'The access token is malformed.');
}

/**
 * Verifies the access tokens management-api issues, in any app: signature by a published key
 * (Postgres, cached), the algorithm taken from that key whatever the token's header says (so `none`,
 * HS256 keyed with the public key, RS256... are refused), `typ`, `iss`, `aud`, `exp`/`nbf` with a
 * small tolerance, then the claims and the revocation set. No network round trip per token.
 *
 * The one verifier: Nest routes reach it through ClientTokenStrategy (@nestjs/passport); a lean
 * path outside Nest's request pipeline calls `verify` (or `verifyBearer`) itself.
 */
@Injectable()
export class AccessTokenVerifier {
  constructor(
    @Inject(OAUTH_OPTIONS) private readonly options: ResolvedOAuthOptions,
    private readonly keys: VerificationKeys,
    private readonly revocations: ClientRevocations,
  ) {}

  get issuer(): string {
    return this.options.issuer;
  }

  /**
   * True when the token, read without verifying it, names this service as issuer: an auth guard
   * accepting both user ID tokens and client tokens routes on this, then verifies properly.
   */
  isOwnToken(token: string): boolean {
    if (token.length > MAX_TOKEN_LENGTH) return false;
    try {
      return decodeJwt(token).iss === this.options.issuer;
    } catch {
      return false;
    }
  }

  async verify(token: string): Promise<ClientPrincipal> {
    if (typeof token !== 'string' || token === '' || token.length > MAX_TOKEN_LENGTH) {
      throw new InvalidTokenError('malformed', 'The access token is malformed.');
    }
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, this.resolveKey, {
        algorithms: [ACCESS_TOKEN_ALG],
        typ: ACCESS_TOKEN_TYP,
        issuer: this.options.issuer,
        audience: this.options.audience,
        clockTolerance: this.options.clockToleranceSeconds,
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
      }));
    } catch (err) {
      throw toInvalidTokenError(err);
    }
    const principal = principalFromClaims(payload);
    this.assertNotRevoked(principal);
    return principal;
  }

  /** Throws when the principal's client was revoked after (or when) its token was issued. */
  assertNotRevoked(principal: ClientPrincipal): void {
    if (this.revocations.isRevoked(principal.clientId, principal.issuedAt)) {
      throw new InvalidTokenError('revoked', 'The access token has been revoked.');
    }
  }

  /**
   * The key named by the header's kid, and the algorithm is that key's: jose already refused any
   * algorithm none of our keys use (`algorithms`), and a header naming another than the key's is refused here.
   */
  private readonly resolveKey = async (header: CompactJWSHeaderParameters): Promise<KeyObject> => {
    if (typeof header.kid !== 'string') throw new InvalidTokenError('unknown_key', 'The access token names no signing key.');
    const key = await this.keys.get(header.kid);
    if (!key) throw new InvalidTokenError('unknown_key', 'The access token was not signed by a key of this service.');
    const alg = key.jwk.alg ?? ACCESS_TOKEN_ALG;
    if (header.alg !== alg) throw new InvalidTokenError('algorithm', `The access token must be signed with ${alg}.`);
    return key.key;
  };
}

/**
 * The client principal of a request's bearer token; throws InvalidTokenError (reason `missing` when
 * there is none). For guards that accept other tokens too: call it when `verifier.isOwnToken(token)`.
 */
export async function verifyBearer(req: Pick<Request, 'headers'>, verifier: AccessTokenVerifier): Promise<ClientPrincipal> {
  const token = bearerTokenOf(req);
  if (token === undefined) throw new InvalidTokenError('missing', 'A bearer access token is required.');
  return verifier.verify(token);
}
