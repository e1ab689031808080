import type { CallerContext } from '@flagship/service-kit';

/**
 * What the authentication guard needs from the OAuth access-token verifier (libs/oauth): the
 * token's `iss` tells an access token of ours from a user's ID token.
 */
export interface ClientTokenPort {
  isAccessToken(token: string): boolean;
  /** The caller of a valid, unrevoked access token and when it expires (ms); throws a 401 problem otherwise. */
  verify(token: string): Promise<{ caller: CallerContext; expiresAt: number }>;
}
export const CLIENT_TOKEN_PORT = Symbol('CLIENT_TOKEN_PORT');
