import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { NoIdempotency, RateLimit } from '@flagship/request-policies';
import { Public } from '../auth/auth.decorators';
import { JwkSetDto } from '../oauth/oauth-clients.dto';
import { CreateDevAccountDto, DevTokenDto, DevTokenResponseDto } from './dev-idp.dto';
import { DevIdpService } from './dev-idp.service';

/** Mounted only when IDP_MODE=dev (see DevIdpModule). */
@ApiTags('dev identity provider')
@Public()
// Unauthenticated: limited per client address (CONTRACT.md section 4: 60 per minute).
@RateLimit({ per: 'ip' })
// Answers are ID tokens: never replayed to another request carrying the same Idempotency-Key.
@NoIdempotency()
@ApiErrors(429)
@Controller('dev/idp')
export class DevIdpController {
  constructor(private readonly idp: DevIdpService) {}

  @Post('accounts')
  @ApiErrors(...BODY_ERRORS)
  @ApiOperation({ summary: 'Create a password account and get its ID token (dev only)' })
  @ApiCreatedResponse({ type: DevTokenResponseDto })
  createAccount(@Body() dto: CreateDevAccountDto): Promise<DevTokenResponseDto> {
    return this.idp.createAccount(dto);
  }

  @Post('token')
  @ApiErrors(...BODY_ERRORS, 401)
  @HttpCode(200)
  @ApiOperation({ summary: 'Sign in with a password or as a federated provider and get an ID token (dev only)' })
  @ApiOkResponse({ type: DevTokenResponseDto })
  token(@Body() dto: DevTokenDto): Promise<DevTokenResponseDto> {
    return this.idp.token(dto);
  }

  @Get('.well-known/jwks.json')
  @ApiOperation({ summary: 'Keys that verify dev ID tokens' })
  @ApiOkResponse({ type: JwkSetDto })
  jwks() {
    return this.idp.jwks();
  }
}
