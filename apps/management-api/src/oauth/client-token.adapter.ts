import type { FactoryProvider } from '@nestjs/common';
import { AccessTokenVerifier, clientCallerContext, InvalidTokenError, invalidTokenProblem } from '@flagship/oauth';
import { CLIENT_TOKEN_PORT, type ClientTokenPort } from '../auth/client-token.port';

/**
 * The authentication resolver's view of OAuth: an access token is ours by `iss`, then verified by
 * the one AccessTokenVerifier (as ClientTokenStrategy and the AI gateway do); a refusal is the 401
 * invalid-token problem with its Bearer challenge. Token in, caller out: no request needed, so the
 * guards and the evaluate route (outside Nest) share it.
 */
export function clientTokenAdapter(verifier: AccessTokenVerifier): ClientTokenPort {
  return {
    isAccessToken: (token) => verifier.isOwnToken(token),
    verify: async (token) => {
      try {
        const principal = await verifier.verify(token);
        return { caller: clientCallerContext(principal), expiresAt: principal.expiresAt.getTime() };
      } catch (err) {
        throw err instanceof InvalidTokenError ? invalidTokenProblem(err) : err;
      }
    },
  };
}

/** `AuthModule.forRoot(mode, { imports: [], factory: CLIENT_TOKEN_FACTORY })`, with OAuthFeatureModule imported by the app. */
export const CLIENT_TOKEN_FACTORY: FactoryProvider<ClientTokenPort> = {
  provide: CLIENT_TOKEN_PORT,
  inject: [AccessTokenVerifier],
  useFactory: clientTokenAdapter,
};
