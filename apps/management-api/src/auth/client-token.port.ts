import type { Request, Response } from 'express';
import type { CallerContext } from '@flagship/service-kit';

/**
 * What the authentication guard needs from the OAuth access-token verifier (libs/oauth): the
 * token's `iss` tells an access token of ours from a user's ID token.
 */
export interface ClientTokenPort {
  isAccessToken(token: string): boolean;
  /** The caller of the request's access token when valid and unrevoked; throws a 401 problem otherwise. */
  authenticate(req: Request, res: Response): Promise<CallerContext>;
}
export const CLIENT_TOKEN_PORT = Symbol('CLIENT_TOKEN_PORT');
