import type { FactoryProvider } from '@nestjs/common';
import { AccessTokenVerifier, authenticateClient, clientCallerContext, ClientTokenStrategy } from '@flagship/oauth';
import { CLIENT_TOKEN_PORT, type ClientTokenPort } from '../auth/client-token.port';

/**
 * The authentication guard's view of OAuth: an access token is ours by `iss`, then authenticated
 * the way every Nest route authenticates clients, through passport and the ClientTokenStrategy.
 */
export function clientTokenAdapter(verifier: AccessTokenVerifier, strategy: ClientTokenStrategy): ClientTokenPort {
  return {
    isAccessToken: (token) => verifier.isOwnToken(token),
    authenticate: async (req, res) => clientCallerContext(await authenticateClient(strategy, req, res)),
  };
}

/** `AuthModule.forRoot(mode, { imports: [], provider: CLIENT_TOKEN_PROVIDER })`, with OAuthFeatureModule imported by the app. */
export const CLIENT_TOKEN_PROVIDER: FactoryProvider<ClientTokenPort> = {
  provide: CLIENT_TOKEN_PORT,
  inject: [AccessTokenVerifier, ClientTokenStrategy],
  useFactory: clientTokenAdapter,
};
