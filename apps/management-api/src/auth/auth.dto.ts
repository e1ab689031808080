import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsJWT, IsString, MaxLength, MinLength } from 'class-validator';

const ID_TOKEN = { description: 'ID token from the identity provider', example: 'eyJhbGciOi...' };

export class SignupDto {
  @ApiProperty(ID_TOKEN)
  @IsString()
  @IsJWT({ message: 'must be a JWT' })
  @MaxLength(8192)
  idToken: string;

  @ApiProperty({ example: 'ada@example.com' })
  @IsEmail({}, { message: 'must be a valid e-mail address' })
  @MaxLength(254)
  email: string;

  @ApiProperty({ minLength: 8 })
  @IsString()
  @MinLength(8, { message: 'must be at least 8 characters' })
  @MaxLength(128)
  password: string;
}

export class LoginDto {
  @ApiProperty(ID_TOKEN)
  @IsString()
  @IsJWT({ message: 'must be a JWT' })
  @MaxLength(8192)
  idToken: string;
}

export class FederatedSigninDto extends LoginDto {
  @ApiProperty({ example: 'google.com', description: 'the federated provider, as the identity provider names it' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  providerName: string;
}

export class ForgotPasswordDto {
  @ApiProperty({ example: 'ada@example.com' })
  @IsEmail({}, { message: 'must be a valid e-mail address' })
  @MaxLength(254)
  email: string;
}

class BootstrapUserDto {
  @ApiProperty() uid: string;
  @ApiProperty() email: string;
  @ApiProperty() tenant_id: string;
  @ApiProperty() role: string;
}
class BootstrapSubscriptionDto {
  @ApiProperty() plan: string;
  @ApiProperty() status: string;
  @ApiProperty() billingCycle: string;
}
class BootstrapTenantDto {
  @ApiProperty() tenant_id: string;
  @ApiProperty() tenant_name: string;
  @ApiProperty() role: string;
}
class BootstrapDataDto {
  @ApiProperty({ type: BootstrapUserDto }) user: BootstrapUserDto;
  @ApiProperty({ type: BootstrapSubscriptionDto }) subscription: BootstrapSubscriptionDto;
  @ApiProperty({ type: [BootstrapTenantDto] }) tenants: BootstrapTenantDto[];
  @ApiProperty() active_tenant_id: string;
  @ApiProperty() active_tenant_role: string;
  @ApiProperty() canonical_tenant_id: string;
  @ApiProperty() canonical_role: string;
}
export class SignInBootstrapDto {
  @ApiProperty() success: boolean;
  @ApiProperty() message: string;
  @ApiProperty({ type: BootstrapDataDto }) data: BootstrapDataDto;
}

export class ForgotPasswordAcceptedDto {
  @ApiProperty({ enum: [true] }) success: true;
  @ApiProperty() message: string;
}

/** How the console signs users in: the dev identity provider's form, or the authorization-code flow with PKCE. */
export class SignInConfigDto {
  @ApiProperty({ enum: ['dev', 'oidc'], description: 'dev: e-mail and password at the embedded identity provider; oidc: the provider below' })
  mode: 'dev' | 'oidc';

  @ApiPropertyOptional({ example: 'https://id.example.com', description: 'oidc: the issuer (its discovery document is {issuer}/.well-known/openid-configuration)' })
  issuer?: string;

  @ApiPropertyOptional({ example: 'flagship-console', description: 'oidc: the console\'s public client id (PKCE, no secret); absent when the console has no client' })
  clientId?: string;

  @ApiPropertyOptional({ type: [String], example: ['openid', 'email', 'profile'] })
  scopes?: string[];

  @ApiPropertyOptional({ example: 'https://flags.example.com/console/auth/callback', description: 'oidc: the redirect URI to register at the provider' })
  redirectUri?: string;

  @ApiPropertyOptional({ example: 'oidc', description: 'oidc: the path segment of POST /api/v1/auth/signin/{provider}' })
  provider?: string;

  @ApiPropertyOptional({ example: 'oidc.acme', description: 'oidc: the providerName to send with the ID token' })
  providerName?: string;

  @ApiPropertyOptional({ example: 'Acme ID', description: 'oidc: the provider as the sign-in button names it' })
  displayName?: string;
}
