import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Put, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import { Caller, CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { GatewayBindingAuditEntryDto, GatewayBindingDto, PutGatewayBindingDto } from './gateway-bindings.dto';
import type { BindingAuditRow, BindingRow } from './gateway-bindings.repository';
import { bindingEtag, GatewayBindingsService } from './gateway-bindings.service';

// Reading a binding is reading flags; binding a route decides where the tenant's AI spend goes: admins, as budgets.
const READ = { role: 'viewer', scopes: ['flags:read'] } as const;
const WRITE = { role: 'admin' } as const;

const toDto = (r: BindingRow): GatewayBindingDto => ({
  productKey: r.productKey,
  flagKey: r.flagKey,
  modelAlias: r.modelAlias,
  environment: r.environment,
  rolloutPlan: r.rolloutPlan,
  spendCaps: r.spendCaps,
  version: r.version,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
});
const toAuditDto = (a: BindingAuditRow): GatewayBindingAuditEntryDto => ({ action: a.action, actor: a.actor, changes: a.changes, createdAt: a.createdAt.toISOString() });

function withEtag(res: Response, row: BindingRow): GatewayBindingDto {
  res.setHeader('ETag', bindingEtag(row));
  return toDto(row);
}

const PRODUCT_KEY = { name: 'productKey', description: 'a product key the gateway serves (`x-service-product-key`)', example: 'core' };

@ApiTags('gateway')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'default: your canonical tenant' })
/** Gateway routes bound to JSON flags (CONTRACT.md section 11): the gateway routes each request by the flag's variation. */
@Controller('api/gateway/bindings')
export class GatewayBindingsController {
  constructor(private readonly bindings: GatewayBindingsService) {}

  @Get()
  @TenantAccess(READ)
  @ApiOperation({ summary: "The tenant's gateway bindings, by product key (at most QUOTA_GATEWAY_BINDINGS_PER_TENANT)" })
  @ApiOkResponse({ type: [GatewayBindingDto] })
  async list(@CurrentTenant() tenant: TenantEntity): Promise<GatewayBindingDto[]> {
    return (await this.bindings.list(tenant.id)).map(toDto);
  }

  @Get(':productKey')
  @TenantAccess(READ)
  @ApiParam(PRODUCT_KEY)
  @ApiOperation({ summary: "A product key's binding, with its ETag" })
  @ApiErrors(404)
  @ApiOkResponse({ type: GatewayBindingDto })
  async get(@CurrentTenant() tenant: TenantEntity, @Param('productKey') productKey: string, @Res({ passthrough: true }) res: Response): Promise<GatewayBindingDto> {
    return withEtag(res, await this.bindings.get(tenant.id, productKey));
  }

  @Put(':productKey')
  @TenantAccess(WRITE)
  @ApiParam(PRODUCT_KEY)
  @ApiHeader({ name: 'X-Environment', required: false, description: 'the environment whose flag the gateway evaluates, default production' })
  @ApiHeader({ name: 'If-Match', required: false, description: 'the ETag read; a stale one (or any, for a product key not bound) is 412' })
  @ApiOperation({
    summary: 'Bind a product key (optionally one model alias) to a JSON flag, or replace its binding',
    description:
      'The flag must exist in the environment and be of type json, each variation `{model, provider?, params?}`: `params` may set temperature, top_p, frequency_penalty, presence_penalty, seed, stop, reasoning_effort, and cap max_tokens / max_completion_tokens; the hosted provider only for a tenant allowed it. The gateway checks each flag version again (its model catalogue included) and serves the model the request asked for, recording why, when a variation is not servable. Takes effect on every gateway within a second.',
  })
  @ApiErrors(...BODY_ERRORS, 404, 409, 412)
  @ApiOkResponse({ type: GatewayBindingDto })
  async put(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Param('productKey') productKey: string,
    @Body() dto: PutGatewayBindingDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<GatewayBindingDto> {
    return withEtag(res, await this.bindings.put(tenant, env, caller, productKey, dto, ifMatch));
  }

  @Delete(':productKey')
  @HttpCode(204)
  @TenantAccess(WRITE)
  @ApiParam(PRODUCT_KEY)
  @ApiHeader({ name: 'If-Match', required: false, description: 'the ETag read; a stale one is 412' })
  @ApiOperation({ summary: "Unbind a product key: its requests go to the model they ask for (a rollout plan on it stops)" })
  @ApiErrors(404, 412)
  @ApiNoContentResponse()
  async remove(@CurrentTenant() tenant: TenantEntity, @Caller() caller: CallerContext, @Headers('if-match') ifMatch: string | undefined, @Param('productKey') productKey: string): Promise<void> {
    await this.bindings.remove(tenant.id, caller, productKey, ifMatch);
  }

  @Get(':productKey/audit')
  @TenantAccess(READ)
  @ApiParam(PRODUCT_KEY)
  @ApiOperation({ summary: "A product key's binding audit trail, oldest first" })
  @ApiOkResponse({ type: [GatewayBindingAuditEntryDto] })
  async audit(@CurrentTenant() tenant: TenantEntity, @Param('productKey') productKey: string): Promise<GatewayBindingAuditEntryDto[]> {
    return (await this.bindings.auditTrail(tenant.id, productKey)).map(toAuditDto);
  }
}
