import { Inject, Injectable } from '@nestjs/common';
import { AccessTokenIssuer, type AccessTokenResponse, dummySecretHash, verifySecret } from '@flagship/oauth';
import { OAuthClientsRepository } from './oauth-clients.repository';
import { OAUTH_FEATURE_OPTIONS, type ResolvedOAuthFeatureOptions } from './oauth-feature.options';
import { OAuthTokenError } from './oauth-token.errors';
import type { TokenRequest } from './token-request';

/** The client-credentials grant (RFC 6749 section 4.4): authenticate the client, settle the scopes, issue. */
@Injectable()
export class OAuthTokenService {
  private readonly dummyHash: string;

  constructor(
    private readonly clients: OAuthClientsRepository,
    private readonly issuer: AccessTokenIssuer,
    @Inject(OAUTH_FEATURE_OPTIONS) options: ResolvedOAuthFeatureOptions,
  ) {
    this.dummyHash = dummySecretHash(options.secretHashCost);
  }

  async token(request: TokenRequest): Promise<AccessTokenResponse> {
    const client = await this.clients.findActiveByClientId(request.clientId);
    // An unknown (or deleted) client costs the same scrypt as a wrong secret, and gets the same
    // answer: neither the timing nor the body tells whether the client id exists.
    const authentic = await verifySecret(request.clientSecret, client?.secretHash ?? this.dummyHash);
    if (!client || !authentic) {
      throw new OAuthTokenError('invalid_client', 'Client authentication failed.', request.authMethod === 'client_secret_basic');
    }
    let scopes = client.scopes;
    if (request.scopes !== undefined && request.scopes.length > 0) {
      const outside = request.scopes.filter((s) => !client.scopes.includes(s));
      if (outside.length > 0) {
        throw new OAuthTokenError('invalid_scope', `The client may not request ${outside.map((s) => s.slice(0, 64)).join(' ')}.`);
      }
      scopes = request.scopes;
    }
    return this.issuer.issue({ clientId: client.clientId, tenantId: client.tenantId, scopes, productKeys: client.productKeys });
  }
}
