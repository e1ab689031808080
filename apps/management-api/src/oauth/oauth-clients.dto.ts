import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { SCOPES } from '@flagship/domain';

/** `POST /api/oauth/clients`. Product keys are checked by the service (the lists are configuration). */
export class CreateOAuthClientDto {
  @ApiProperty({ example: 'billing backend', minLength: 1, maxLength: 200 })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  @Matches(/\S/, { message: 'name must not be blank' })
  name: string;

  @ApiProperty({
    enum: SCOPES,
    isArray: true,
    minItems: 1,
    example: ['flags:read', 'flags:evaluate'],
    description: 'at least one; `ai:invoke` is what the AI gateway requires (a client for flags cannot spend credits)',
  })
  @IsArray()
  @ArrayMinSize(1, { message: `scopes needs at least one of ${SCOPES.join(', ')}` })
  @ArrayMaxSize(SCOPES.length)
  @IsIn(SCOPES, { each: true, message: `each scope must be one of ${SCOPES.join(', ')}` })
  scopes: string[];

  @ApiPropertyOptional({
    isArray: true,
    type: String,
    example: ['core'],
    description:
      'the product keys this client may use at the AI gateway, the own product included when the list is not empty (empty or left out: the own product only); internal suite keys need a platform admin',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @MaxLength(64, { each: true })
  productKeys?: string[];
}

/** An OAuth client as listed: never its secret. */
export class OAuthClientDto {
  @ApiProperty({ example: 'ffc_4Vq0yYc2mB1e8Zr7Hk3TnW' })
  clientId: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ enum: SCOPES, isArray: true })
  scopes: string[];

  @ApiProperty({ type: String, isArray: true })
  productKeys: string[];

  @ApiProperty({ format: 'date-time' })
  createdAt: string;

  @ApiProperty({ type: String, nullable: true, description: 'the user who created it' })
  createdBy: string | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  secretRotatedAt: string | null;
}

/** The creation and rotate-secret answers: the only time the secret is ever shown. */
export class OAuthClientWithSecretDto extends OAuthClientDto {
  @ApiProperty({ description: 'shown once; store it in a secrets manager', example: 'ffs_…' })
  clientSecret: string;
}

/** `POST /oauth/token` form fields (RFC 6749 sections 2.3.1 and 4.4.2), for the OpenAPI document. */
export class TokenRequestFormDto {
  @ApiProperty({ enum: ['client_credentials'] })
  grant_type: string;

  @ApiPropertyOptional({ description: 'client_secret_post; with client_secret_basic it may be left out' })
  client_id?: string;

  @ApiPropertyOptional({ description: 'client_secret_post only' })
  client_secret?: string;

  @ApiPropertyOptional({ description: "space-separated scopes; default all of the client's", example: 'flags:read flags:evaluate' })
  scope?: string;
}

/** RFC 6749 section 5.1. */
export class AccessTokenResponseDto {
  @ApiProperty({ description: 'a JWT signed ES256' })
  access_token: string;

  @ApiProperty({ enum: ['Bearer'] })
  token_type: 'Bearer';

  @ApiProperty({ example: 3600 })
  expires_in: number;

  @ApiProperty({ example: 'flags:read flags:evaluate' })
  scope: string;
}

/** RFC 6749 section 5.2: the token endpoint's errors are this, not problem details. */
export class OAuthErrorDto {
  @ApiProperty({ enum: ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'] })
  error: string;

  @ApiProperty()
  error_description: string;
}

export class PublicJwkDto {
  @ApiProperty({ enum: ['EC'] }) kty: 'EC';
  @ApiProperty({ enum: ['P-256'] }) crv: 'P-256';
  @ApiProperty() x: string;
  @ApiProperty() y: string;
  @ApiPropertyOptional() kid?: string;
  @ApiPropertyOptional({ enum: ['ES256'] }) alg?: 'ES256';
  @ApiPropertyOptional({ enum: ['sig'] }) use?: 'sig';
}

/** RFC 7517 JWK set. */
export class JwkSetDto {
  @ApiProperty({ type: [PublicJwkDto] }) keys: PublicJwkDto[];
}

/** RFC 8414 authorization server metadata. */
export class AuthorizationServerMetadataDto {
  @ApiProperty() issuer: string;
  @ApiProperty() token_endpoint: string;
  @ApiProperty() jwks_uri: string;
  @ApiProperty({ type: [String] }) grant_types_supported: string[];
  @ApiProperty({ type: [String] }) token_endpoint_auth_methods_supported: string[];
  @ApiProperty({ type: [String] }) scopes_supported: string[];
  @ApiProperty({ type: [String], description: 'none: machine clients only' }) response_types_supported: string[];
}
