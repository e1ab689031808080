import { Body, Controller, createParamDecorator, Delete, type ExecutionContext, Get, Headers, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { type CallerContext, callerOf } from '@flagship/service-kit';
import { Caller, CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { ChangeRequestsService } from './change-requests.service';
import { ChangeCommentDto, ChangeDecisionDto, ChangeRequestDto, CreateChangeRequestDto, CreateScheduledChangeDto, ScheduledChangeDto } from './flag-changes.dto';
import { toChangeRequestDto, toScheduledChangeDto } from './flag-changes.mapper';
import { ScheduledChangesService } from './scheduled-changes.service';

/** One change request or schedule a route acts on, as its path, headers and guard name it. */
interface ChangeRef {
  tenantId: string;
  env: string | undefined;
  flagKey: string;
  id: string;
  caller: CallerContext;
}

/** The route's ChangeRef (a route under @TenantAccess with :flagKey and :id), so each handler is one call. */
const Change = createParamDecorator((_: unknown, ctx: ExecutionContext): ChangeRef => {
  const req = ctx.switchToHttp().getRequest<Request & { tenant?: TenantEntity }>();
  const caller = callerOf(req);
  if (!caller || !req.tenant) throw new Error('Change used on a route without @TenantAccess');
  const env = req.headers['x-environment'];
  return { tenantId: req.tenant.id, env: typeof env === 'string' ? env : undefined, flagKey: String(req.params['flagKey']), id: String(req.params['id']), caller };
});

const READ = { role: 'viewer', scopes: ['flags:read'] } as const;
const WRITE = { role: 'editor', scopes: ['flags:write'] } as const;

/** Change requests (approvals) and scheduled changes of one flag in the request's environment (CONTRACT.md section 10). */
@ApiTags('flags')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false })
@ApiHeader({ name: 'X-Environment', required: false, description: 'environment key, default production' })
@ApiParam({ name: 'flagKey', type: String })
@Controller('api/flags/:flagKey')
export class FlagChangesController {
  constructor(
    private readonly requests: ChangeRequestsService,
    private readonly schedules: ScheduledChangesService,
  ) {}

  @Get('change-requests')
  @TenantAccess(READ)
  @ApiOperation({ summary: "A flag's change requests in the environment, newest first (at most 100)" })
  @ApiOkResponse({ type: [ChangeRequestDto] })
  async listRequests(@CurrentTenant() tenant: TenantEntity, @Headers('x-environment') env: string | undefined, @Param('flagKey') key: string): Promise<ChangeRequestDto[]> {
    return (await this.requests.list(tenant.id, env, key)).map(toChangeRequestDto);
  }

  @Post('change-requests')
  @TenantAccess(WRITE)
  @ApiOperation({ summary: 'Request a change to the flag (a PATCH body), to be approved by another member', description: 'At most 20 pending or approved requests per flag and environment, and 1000 open requests and schedules per tenant (409 too-many-pending-changes); a patch of at most 65536 bytes (422).' })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: ChangeRequestDto })
  async createRequest(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Param('flagKey') key: string,
    @Body() dto: CreateChangeRequestDto,
  ): Promise<ChangeRequestDto> {
    return toChangeRequestDto(await this.requests.create(tenant.id, env, caller, key, { patch: dto.patch, comment: dto.comment, executeAt: dto.executeAt === undefined ? undefined : new Date(dto.executeAt) }));
  }

  @Get('change-requests/:id')
  @ApiParam({ name: 'id', type: String, format: 'uuid' })
  @TenantAccess(READ)
  @ApiOperation({ summary: 'A change request with its comments' })
  @ApiOkResponse({ type: ChangeRequestDto })
  async getRequest(@Change() c: ChangeRef): Promise<ChangeRequestDto> {
    return toChangeRequestDto(await this.requests.get(c.tenantId, c.env, c.flagKey, c.id));
  }

  @Post('change-requests/:id/comments')
  @ApiParam({ name: 'id', type: String, format: 'uuid' })
  @HttpCode(200)
  @TenantAccess(WRITE)
  @ApiOperation({ summary: 'Comment on a change request (at most 50 comments)' })
  @ApiErrors(...BODY_ERRORS)
  @ApiOkResponse({ type: ChangeRequestDto })
  async comment(@Change() c: ChangeRef, @Body() dto: ChangeCommentDto): Promise<ChangeRequestDto> {
    return toChangeRequestDto(await this.requests.comment(c.tenantId, c.env, c.caller, c.flagKey, c.id, dto.comment));
  }

  @Post('change-requests/:id/approve')
  @ApiParam({ name: 'id', type: String, format: 'uuid' })
  @HttpCode(200)
  @TenantAccess(WRITE)
  @ApiOperation({
    summary: 'Approve a pending change request',
    description: 'By a member with the editor role or above who is not its author (403 approval-not-allowed, saying why); while the flag is still at the version the request was made against (else 409 change-request-stale, and the request is stale).',
  })
  @ApiErrors(...BODY_ERRORS)
  @ApiOkResponse({ type: ChangeRequestDto })
  async approve(@Change() c: ChangeRef, @Body() dto: ChangeDecisionDto): Promise<ChangeRequestDto> {
    return toChangeRequestDto(await this.requests.approve(c.tenantId, c.env, c.caller, c.flagKey, c.id, dto.comment));
  }

  @Post('change-requests/:id/reject')
  @ApiParam({ name: 'id', type: String, format: 'uuid' })
  @HttpCode(200)
  @TenantAccess(WRITE)
  @ApiOperation({ summary: 'Reject a pending or approved change request (its author may withdraw it so)' })
  @ApiErrors(...BODY_ERRORS)
  @ApiOkResponse({ type: ChangeRequestDto })
  async reject(@Change() c: ChangeRef, @Body() dto: ChangeDecisionDto): Promise<ChangeRequestDto> {
    return toChangeRequestDto(await this.requests.reject(c.tenantId, c.env, c.caller, c.flagKey, c.id, dto.comment));
  }

  @Post('change-requests/:id/apply')
  @ApiParam({ name: 'id', type: String, format: 'uuid' })
  @HttpCode(200)
  @TenantAccess(WRITE)
  @ApiOperation({
    summary: 'Apply an approved change request',
    description: "Written as its author with PATCH's rules, only while the flag is at the request's version (else 409 change-request-stale); with executeAt it is scheduled instead.",
  })
  @ApiErrors(400, 409, 422)
  @ApiOkResponse({ type: ChangeRequestDto })
  async apply(@Change() c: ChangeRef): Promise<ChangeRequestDto> {
    return toChangeRequestDto(await this.requests.apply(c.tenantId, c.env, c.caller, c.flagKey, c.id));
  }

  @Get('scheduled-changes')
  @TenantAccess(READ)
  @ApiOperation({ summary: "A flag's scheduled changes in the environment, latest first (at most 100)" })
  @ApiOkResponse({ type: [ScheduledChangeDto] })
  async listScheduled(@CurrentTenant() tenant: TenantEntity, @Headers('x-environment') env: string | undefined, @Param('flagKey') key: string): Promise<ScheduledChangeDto[]> {
    return (await this.schedules.list(tenant.id, env, key)).map(toScheduledChangeDto);
  }

  @Post('scheduled-changes')
  @TenantAccess(WRITE)
  @ApiOperation({
    summary: 'Schedule a change to the flag (a PATCH body) for executeAt',
    description:
      'Written then as the caller, once, by whichever replica claims it; it fails (state failed, with the reason) when a field it sets was changed by someone else meanwhile, or the rules refuse it then. ' +
      'Where approval is required it is a 409 approval-required: a change request with executeAt schedules it once approved. At most 50 scheduled per flag and environment, and 1000 open requests and schedules per tenant (409 too-many-pending-changes); a patch of at most 65536 bytes (422).',
  })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: ScheduledChangeDto })
  async schedule(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Param('flagKey') key: string,
    @Body() dto: CreateScheduledChangeDto,
  ): Promise<ScheduledChangeDto> {
    return toScheduledChangeDto(await this.schedules.create(tenant.id, env, caller, key, { patch: dto.patch, executeAt: new Date(dto.executeAt) }));
  }

  @Delete('scheduled-changes/:id')
  @ApiParam({ name: 'id', type: String, format: 'uuid' })
  @HttpCode(204)
  @TenantAccess(WRITE)
  @ApiOperation({ summary: 'Cancel a scheduled change that has not run' })
  @ApiErrors(409)
  @ApiNoContentResponse()
  async cancel(@Change() c: ChangeRef): Promise<void> {
    await this.schedules.cancel(c.tenantId, c.env, c.caller, c.flagKey, c.id);
  }
}
