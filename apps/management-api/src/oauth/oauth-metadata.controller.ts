import { Controller, Get, Header, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { SCOPES } from '@flagship/domain';
import { ApiErrors } from '@flagship/problem-details';
import { Public, VerificationKeys, type PublicEcJwk } from '@flagship/oauth';
import { AuthorizationServerMetadataDto, JwkSetDto } from './oauth-clients.dto';
import { OAUTH_FEATURE_OPTIONS, type ResolvedOAuthFeatureOptions } from './oauth-feature.options';

/** RFC 8414 authorization server metadata. */
export interface AuthorizationServerMetadata {
  issuer: string;
  token_endpoint: string;
  jwks_uri: string;
  grant_types_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  scopes_supported: string[];
  response_types_supported: string[];
}

export function authorizationServerMetadata(options: ResolvedOAuthFeatureOptions): AuthorizationServerMetadata {
  return {
    issuer: options.issuer,
    token_endpoint: `${options.publicBaseUrl}/oauth/token`,
    jwks_uri: `${options.publicBaseUrl}/.well-known/jwks.json`,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    scopes_supported: [...SCOPES],
    // No authorization endpoint: machine clients only.
    response_types_supported: [],
  };
}

@ApiTags('oauth')
@Controller('.well-known')
@Public()
@ApiErrors(429)
export class OAuthMetadataController {
  private readonly metadata: AuthorizationServerMetadata;

  constructor(
    private readonly keys: VerificationKeys,
    @Inject(OAUTH_FEATURE_OPTIONS) options: ResolvedOAuthFeatureOptions,
  ) {
    this.metadata = authorizationServerMetadata(options);
  }

  /** Every published public key. Short caching: a new key is announced while it starts signing. */
  @Get('jwks.json')
  @Header('Cache-Control', 'public, max-age=60')
  @ApiOperation({ summary: 'Public keys of access tokens (RFC 7517 JWK set)' })
  @ApiOkResponse({ type: JwkSetDto, description: 'EC P-256 public keys with kid, alg ES256, use sig' })
  jwks(): { keys: PublicEcJwk[] } {
    return { keys: this.keys.published() };
  }

  @Get('oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ summary: 'OAuth 2.0 authorization server metadata (RFC 8414)' })
  @ApiOkResponse({ type: AuthorizationServerMetadataDto })
  document(): AuthorizationServerMetadata {
    return this.metadata;
  }
}
