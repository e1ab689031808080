import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { decodeProtectedHeader } from 'jose';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { AccessTokenVerifier } from './access-token.verifier';
import { type ClientPrincipal, principalFromClaims } from './client-principal';
import { InvalidTokenError } from './oauth.errors';
import { ACCESS_TOKEN_ALG, ACCESS_TOKEN_TYP, OAUTH_OPTIONS, type ResolvedOAuthOptions } from './oauth.options';
import { VerificationKeys } from './verification-keys';

/** passport's name of the strategy (for `AuthGuard(CLIENT_JWT_STRATEGY)` in an app with one OAuthModule). */
export const CLIENT_JWT_STRATEGY = 'oauth-client-jwt';

/**
 * The same checks as AccessTokenVerifier, through @nestjs/passport and passport-jwt: the key comes
 * from the kid through the shared key cache, the algorithm list is ES256 only (jsonwebtoken also
 * refuses an HMAC algorithm with a public key), issuer and audience are fixed, and `validate`
 * applies the shared claim rules and the revocation set.
 */
@Injectable()
export class ClientJwtStrategy extends PassportStrategy(Strategy, CLIENT_JWT_STRATEGY) {
  constructor(
    @Inject(OAUTH_OPTIONS) options: ResolvedOAuthOptions,
    keys: VerificationKeys,
    private readonly verifier: AccessTokenVerifier,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKeyProvider: (_req: Request, rawJwtToken: unknown, done: (err: unknown, secretOrKey?: string) => void) => {
        let kid: string;
        try {
          const header = decodeProtectedHeader(String(rawJwtToken));
          // The alg check proper is jsonwebtoken's `algorithms`; these fail early with a clear reason.
          if (header.alg !== ACCESS_TOKEN_ALG) throw new InvalidTokenError('algorithm', `The access token must be signed with ${ACCESS_TOKEN_ALG}.`);
          if (typeof header.typ !== 'string' || header.typ.toLowerCase().replace(/^application\//, '') !== ACCESS_TOKEN_TYP) {
            throw new InvalidTokenError('wrong_type', 'The token is not an access token.');
          }
          if (typeof header.kid !== 'string') throw new InvalidTokenError('unknown_key', 'The access token names no signing key.');
          kid = header.kid;
        } catch (err) {
          done(err instanceof InvalidTokenError ? err : new InvalidTokenError('malformed', 'The access token is malformed.'));
          return;
        }
        keys.get(kid).then(
          // jsonwebtoken 9 takes a KeyObject as is (a PEM would be parsed again on every request);
          // @types/passport-jwt only knows string | Buffer.
          (key) => (key ? done(null, key.key as unknown as string) : done(new InvalidTokenError('unknown_key', 'The access token was not signed by a key of this service.'))),
          () => done(new InvalidTokenError('unknown_key', 'The access token was not signed by a key of this service.')),
        );
      },
      algorithms: [ACCESS_TOKEN_ALG],
      issuer: options.issuer,
      audience: options.audience,
      jsonWebTokenOptions: { clockTolerance: options.clockToleranceSeconds },
    });
  }

  validate(payload: unknown): ClientPrincipal {
    const principal = principalFromClaims(payload);
    this.verifier.assertNotRevoked(principal);
    return principal;
  }
}
