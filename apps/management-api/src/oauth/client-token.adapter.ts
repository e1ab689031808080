import type { FactoryProvider } from '@nestjs/common';
import { AccessTokenVerifier, clientCallerContext, InvalidTokenError, invalidTokenProblem } from '@flagship/oauth';
import { CLIENT_TOKEN_PORT, type ClientTokenPort } from '../auth/client-token.port';

/** The authentication guard's view of the OAuth verifier: ours by `iss`, then verified in full. */
export function clientTokenAdapter(verifier: AccessTokenVerifier): ClientTokenPort {
  return {
    isAccessToken: (token) => verifier.isOwnToken(token),
    verify: async (token) => {
      try {
        return clientCallerContext(await verifier.verify(token));
      } catch (err) {
        throw err instanceof InvalidTokenError ? invalidTokenProblem(err) : err;
      }
    },
  };
}

/** `AuthModule.forRoot(mode, { imports: [], provider: CLIENT_TOKEN_PROVIDER })`, with OAuthFeatureModule imported by the app. */
export const CLIENT_TOKEN_PROVIDER: FactoryProvider<ClientTokenPort> = {
  provide: CLIENT_TOKEN_PORT,
  inject: [AccessTokenVerifier],
  useFactory: clientTokenAdapter,
};
