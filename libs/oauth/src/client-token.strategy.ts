import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-strategy';
import { AccessTokenVerifier, bearerTokenOf } from './access-token.verifier';
import type { ClientPrincipal } from './client-principal';
import { InvalidTokenError } from './oauth.errors';

/** passport's name of the strategy. */
export const CLIENT_TOKEN_STRATEGY = 'oauth-client-token';

type Verified = (err: unknown, principal?: ClientPrincipal | null) => void;

/**
 * passport's half: takes the bearer token off the request (RFC 6750) and hands it to the verify
 * callback, which @nestjs/passport wires to the strategy's `validate`.
 */
class BearerTokenStrategy extends Strategy {
  constructor(private readonly verifyToken: (token: string, done: Verified) => void) {
    super();
  }

  override authenticate(req: Request): void {
    const token = bearerTokenOf(req);
    if (token === undefined) {
      this.error(new InvalidTokenError('missing', 'A bearer access token is required.'));
      return;
    }
    this.verifyToken(token, (err, principal) => {
      if (err) this.error(err instanceof Error ? err : new Error(String(err)));
      else if (principal) this.success(principal);
      else this.error(new InvalidTokenError('malformed', 'The access token is malformed.'));
    });
  }
}

/**
 * How Nest routes authenticate OAuth clients (through @nestjs/passport): the bearer token goes to
 * the one AccessTokenVerifier (jose; the algorithm from the key, the revocation set honoured), so
 * every path, guards here and the AI gateway's lean path calling the verifier itself, refuses
 * exactly the same tokens for the same reasons.
 */
@Injectable()
export class ClientTokenStrategy extends PassportStrategy(BearerTokenStrategy, CLIENT_TOKEN_STRATEGY) {
  constructor(private readonly verifier: AccessTokenVerifier) {
    super();
  }

  validate(token: string): Promise<ClientPrincipal> {
    return this.verifier.verify(token);
  }
}
