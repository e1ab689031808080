import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { SecretResponse } from '@flagship/request-policies';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { PageQueryDto, pageLimit, sendPage, type CallerContext } from '@flagship/service-kit';
import { Caller, CurrentTenant, CurrentUser, TenantAccess } from '../auth/auth.decorators';
import type { UserEntity } from '../users/user.entity';
import { CreateOAuthClientDto, OAuthClientDto, OAuthClientWithSecretDto } from './oauth-clients.dto';
import { OAuthClientsService } from './oauth-clients.service';

/** Tenant admins manage their machine clients; client tokens cannot (no scope grants it). */
@ApiTags('oauth clients')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'required on create' })
@Controller('api/oauth/clients')
export class OAuthClientsController {
  constructor(private readonly clients: OAuthClientsService) {}

  @Post()
  @TenantAccess({ role: 'admin', headerRequired: true })
  @ApiOperation({ summary: 'Create an OAuth client; its secret is shown once' })
  @ApiErrors(...BODY_ERRORS, 409)
  @Header('Cache-Control', 'no-store')
  // The secret is never kept for an Idempotency-Key replay: a retry gets 409 and the Location.
  @SecretResponse()
  @ApiCreatedResponse({ type: OAuthClientWithSecretDto, description: 'clientSecret is shown this once' })
  create(@CurrentTenant() tenant: TenantEntity, @CurrentUser() user: UserEntity, @Caller() caller: CallerContext, @Body() dto: CreateOAuthClientDto) {
    return this.clients.create(tenant.id, user.id, dto, caller.isPlatformAdmin === true);
  }

  @Get()
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: "The tenant's OAuth clients, without secrets (paginated)" })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [OAuthClientDto] })
  async list(@CurrentTenant() tenant: TenantEntity, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response) {
    const limit = pageLimit(page);
    const rows = await this.clients.list(tenant.id, { limit, cursor: page.cursor });
    return sendPage(req, res, rows, limit, (c) => ({ at: c.createdAt, id: c.clientId }));
  }

  @Delete(':clientId')
  @HttpCode(204)
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'Delete an OAuth client and refuse its tokens' })
  @ApiNoContentResponse({ description: "deleted; its tokens are refused in every app within seconds" })
  async remove(@CurrentTenant() tenant: TenantEntity, @Param('clientId') clientId: string): Promise<void> {
    await this.clients.delete(tenant.id, clientId);
  }

  @Post(':clientId/rotate-secret')
  @HttpCode(200)
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: "Rotate an OAuth client's secret" })
  @ApiErrors(409)
  @Header('Cache-Control', 'no-store')
  @SecretResponse()
  @ApiOkResponse({ type: OAuthClientWithSecretDto, description: 'the new secret, shown this once; the old one stops working' })
  rotate(@CurrentTenant() tenant: TenantEntity, @Param('clientId') clientId: string) {
    return this.clients.rotateSecret(tenant.id, clientId);
  }
}
