import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiCreatedResponse, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { SecretResponse } from '@flagship/request-policies';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { PageQueryDto, pageLimit, sendPage } from '@flagship/service-kit';
import { CurrentTenant, CurrentUser, TenantAccess } from '../auth/auth.decorators';
import type { UserEntity } from '../users/user.entity';
import { CreateWebhookDto, WebhookDeliveryDto, WebhookDto, WebhookWithSecretDto } from './webhooks.dto';
import { WebhooksService } from './webhooks.service';

/** Tenant admins manage the tenant's outbound webhooks (Standard Webhooks deliveries, CONTRACT.md section 10). */
@ApiTags('webhooks')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'required on create' })
@Controller('api/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  // Named, never the earliest tenant where the caller is admin: a webhook sends that tenant's changes out.
  @TenantAccess({ role: 'admin', headerRequired: true })
  @ApiOperation({ summary: 'Create a webhook; its whsec_ signing secret is shown once' })
  @ApiErrors(...BODY_ERRORS, 409)
  @Header('Cache-Control', 'no-store')
  @SecretResponse()
  @ApiCreatedResponse({ type: WebhookWithSecretDto, description: 'secret is shown this once' })
  create(@CurrentTenant() tenant: TenantEntity, @CurrentUser() user: UserEntity, @Body() dto: CreateWebhookDto) {
    return this.webhooks.create(tenant.id, user.id, dto);
  }

  @Get()
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: "The tenant's webhooks, without secrets (paginated)" })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [WebhookDto] })
  async list(@CurrentTenant() tenant: TenantEntity, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response) {
    const limit = pageLimit(page);
    const rows = await this.webhooks.list(tenant.id, { limit, cursor: page.cursor });
    return sendPage(req, res, rows, limit, (w) => ({ at: w.createdAt.toISOString(), id: w.id }));
  }

  @Delete(':webhookId')
  @HttpCode(204)
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'Delete a webhook and its delivery log' })
  @ApiNoContentResponse({ description: 'deleted; deliveries not yet sent are dropped' })
  async remove(@CurrentTenant() tenant: TenantEntity, @Param('webhookId') id: string): Promise<void> {
    await this.webhooks.remove(tenant.id, id);
  }

  @Get(':webhookId/deliveries')
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: "A webhook's delivery log, newest first, each attempt with its outcome (paginated)" })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [WebhookDeliveryDto] })
  async deliveries(@CurrentTenant() tenant: TenantEntity, @Param('webhookId') id: string, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response) {
    const limit = pageLimit(page);
    const rows = await this.webhooks.deliveries(tenant.id, id, { limit, cursor: page.cursor });
    return sendPage(req, res, rows, limit, (d) => ({ at: d.createdAt.toISOString(), id: d.id }));
  }

  @Post(':webhookId/deliveries/:deliveryId/replay')
  @HttpCode(202)
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'Send a logged delivery again, with its webhook-id' })
  @ApiErrors(409)
  @ApiAcceptedResponse({ description: 'queued; the delivery log shows the attempt' })
  async replay(@CurrentTenant() tenant: TenantEntity, @Param('webhookId') id: string, @Param('deliveryId') deliveryId: string): Promise<void> {
    await this.webhooks.replay(tenant.id, id, deliveryId);
  }
}
