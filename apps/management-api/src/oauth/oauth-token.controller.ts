import { Controller, Header, Headers, HttpCode, Post, Req, UseFilters } from '@nestjs/common';
import type { Request } from 'express';
import { ApiBadRequestResponse, ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { Public } from '@flagship/oauth';
import { ApiErrors, Consumes } from '@flagship/problem-details';
import { NoIdempotency, RateLimit } from '@flagship/request-policies';
import { AccessTokenResponseDto, OAuthErrorDto, TokenRequestFormDto } from './oauth-clients.dto';
import { OAuthTokenErrorFilter } from './oauth-token.errors';
import { OAuthTokenService } from './oauth-token.service';
import { parseTokenRequest } from './token-request';

@ApiTags('oauth')
@Controller('oauth')
@UseFilters(OAuthTokenErrorFilter)
export class OAuthTokenController {
  constructor(private readonly tokens: OAuthTokenService) {}

  /**
   * The form is read by parseTokenRequest rather than a validated DTO: RFC 6749 wants unknown fields
   * ignored, where the global pipe refuses them.
   */
  @Post('token')
  @Public()
  // CONTRACT.md section 4: the token endpoint shares the sign-in endpoints' budget per client address.
  @RateLimit({ per: 'ip' })
  // Its answer is a credential: never replayed, whatever Idempotency-Key the request carries.
  @NoIdempotency()
  @HttpCode(200)
  @Consumes('application/x-www-form-urlencoded')
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({ summary: 'Access token by client credentials (client_secret_basic or client_secret_post)' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: TokenRequestFormDto })
  @ApiOkResponse({ type: AccessTokenResponseDto })
  @ApiBadRequestResponse({ type: OAuthErrorDto, description: 'invalid_request, unsupported_grant_type, invalid_scope (RFC 6749 section 5.2)' })
  @ApiUnauthorizedResponse({ type: OAuthErrorDto, description: 'invalid_client' })
  // Refused before the token endpoint's own RFC 6749 errors: problem details like every other route.
  @ApiErrors(413, 415, 429, 503)
  token(@Req() req: Request, @Headers('authorization') authorization?: string): Promise<AccessTokenResponseDto> {
    // The raw parsed form (not @Body): an absent body must become RFC 6749's invalid_request, not the pipe's 422.
    const form = typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : {};
    return this.tokens.token(parseTokenRequest(form, authorization));
  }
}
