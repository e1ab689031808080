import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { NoIdempotency, RateLimit } from '@flagship/request-policies';
import { OptionalHeader, Public } from './auth.decorators';
import { FederatedSigninDto, ForgotPasswordAcceptedDto, ForgotPasswordDto, LoginDto, SignInBootstrapDto, SignInConfigDto, SignupDto } from './auth.dto';
import { AuthService } from './auth.service';

const TENANT_HEADER = { name: 'X-Tenant-ID', required: false, description: 'tenant to make active, when the user is a member' };

/** Sign-in bootstrap: the identity provider's ID token in, the user's tenant context out. */
@ApiTags('auth')
@Public()
// Unauthenticated: limited per client address (CONTRACT.md section 4: 60 per minute).
@RateLimit({ per: 'ip' })
// Answers are sessions: never replayed to another request carrying the same Idempotency-Key.
@NoIdempotency()
@ApiErrors(429, 503)
@Controller('api/v1/auth')
export class AuthController {
  constructor(private readonly auth: AuthService) {}

  @Get('config')
  @ApiOperation({ summary: 'How a frontend signs users in: the identity provider mode, and in oidc mode the provider, client and bootstrap route' })
  @ApiOkResponse({ type: SignInConfigDto })
  config(): SignInConfigDto {
    return this.auth.signInConfig();
  }

  @Post('signup')
  @ApiOperation({ summary: 'Sign up with an ID token: creates the user and a personal tenant' })
  @ApiErrors(...BODY_ERRORS, 401)
  @ApiHeader(TENANT_HEADER)
  @ApiCreatedResponse({ type: SignInBootstrapDto })
  signup(@Body() dto: SignupDto, @OptionalHeader('x-tenant-id') tenantId?: string) {
    return this.auth.signup(dto, tenantId);
  }

  @Post('login')
  @ApiOperation({ summary: 'Log in with an ID token: the user\'s tenants and active tenant' })
  @ApiErrors(...BODY_ERRORS, 401, 403, 404)
  @HttpCode(200)
  @ApiHeader(TENANT_HEADER)
  @ApiOkResponse({ type: SignInBootstrapDto })
  login(@Body() dto: LoginDto, @OptionalHeader('x-tenant-id') tenantId?: string) {
    return this.auth.login(dto.idToken, tenantId);
  }

  @Post('signin/:provider')
  @ApiOperation({ summary: 'Sign in through a federated provider; creates the user on first sign-in' })
  @ApiErrors(...BODY_ERRORS, 401, 403, 404)
  @HttpCode(200)
  @ApiHeader(TENANT_HEADER)
  @ApiOkResponse({ type: SignInBootstrapDto })
  signin(@Param('provider') provider: string, @Body() dto: FederatedSigninDto, @OptionalHeader('x-tenant-id') tenantId?: string) {
    return this.auth.federatedSignin(provider, dto, tenantId);
  }

  @Post('forgot-password')
  @ApiOperation({ summary: 'Start a password reset (always 202: no account enumeration)' })
  @ApiErrors(...BODY_ERRORS)
  @HttpCode(202)
  @ApiAcceptedResponse({ type: ForgotPasswordAcceptedDto, description: 'always, whether or not the account exists' })
  async forgotPassword(@Body() dto: ForgotPasswordDto): Promise<ForgotPasswordAcceptedDto> {
    await this.auth.forgotPassword(dto.email);
    return { success: true, message: 'If an account exists for this e-mail, a reset link is on its way.' };
  }
}
