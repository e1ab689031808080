import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { type CallerContext, pageLimit, PageQueryDto, sendPage } from '@flagship/service-kit';
import { Caller, CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { segmentEtag, toSegmentAuditEntryDto, toSegmentDto } from './segment.mapper';
import { CreateSegmentDto, SegmentAuditEntryDto, SegmentDto, UpdateSegmentDto } from './segments.dto';
import { type SegmentView, SegmentsService } from './segments.service';

// The flags' permissions: a segment is part of what flags evaluate.
const READ = { role: 'viewer', scopes: ['flags:read'] } as const;
const WRITE = { role: 'editor', scopes: ['flags:write'] } as const;

function withEtag(res: Response, view: SegmentView): SegmentDto {
  res.setHeader('ETag', segmentEtag(view.row));
  return toSegmentDto(view);
}

@ApiTags('segments')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'required for users on list, create and read' })
@ApiHeader({ name: 'X-Environment', required: false, description: 'environment key, default production: a segment lives in one environment' })
/** Segments (CONTRACT.md section 10): per environment, used by flags through the segmentMatch operator. */
@Controller('api/segments')
export class SegmentsController {
  constructor(private readonly segments: SegmentsService) {}

  @Get()
  @TenantAccess({ ...READ, headerRequired: true })
  @ApiOperation({ summary: "List the environment's segments, oldest first (paginated)" })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [SegmentDto] })
  async list(
    @CurrentTenant() tenant: TenantEntity,
    @Headers('x-environment') env: string | undefined,
    @Query() page: PageQueryDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SegmentDto[]> {
    const limit = pageLimit(page);
    const views = await this.segments.list(tenant.id, env, limit, page.cursor);
    return sendPage(req, res, views, limit, (v) => ({ at: v.row.createdAt.toISOString(), id: v.row.id })).map(toSegmentDto);
  }

  @Post()
  @TenantAccess({ ...WRITE, headerRequired: true })
  @ApiOperation({ summary: 'Create a segment in the environment' })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: SegmentDto })
  async create(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Body() dto: CreateSegmentDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SegmentDto> {
    return withEtag(res, await this.segments.create(tenant.id, env, caller, dto));
  }

  @Get(':segmentKey')
  @TenantAccess({ ...READ, headerRequired: true })
  @ApiOperation({ summary: 'Get a segment of the environment, with its ETag' })
  @ApiErrors(400)
  @ApiOkResponse({ type: SegmentDto })
  async get(@CurrentTenant() tenant: TenantEntity, @Headers('x-environment') env: string | undefined, @Param('segmentKey') key: string, @Res({ passthrough: true }) res: Response): Promise<SegmentDto> {
    return withEtag(res, await this.segments.get(tenant.id, env, key));
  }

  @Patch(':segmentKey')
  @TenantAccess(WRITE)
  @ApiOperation({ summary: 'Update a segment (If-Match for optimistic concurrency); the fields sent replace the stored ones, lists whole' })
  @ApiErrors(...BODY_ERRORS, 412)
  @ApiHeader({ name: 'If-Match', required: false, description: 'the ETag read; a stale one is 412' })
  @ApiOkResponse({ type: SegmentDto })
  async update(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Param('segmentKey') key: string,
    @Body() dto: UpdateSegmentDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SegmentDto> {
    return withEtag(res, await this.segments.update(tenant.id, env, caller, key, dto, ifMatch));
  }

  @Delete(':segmentKey')
  @HttpCode(204)
  @TenantAccess(WRITE)
  @ApiOperation({ summary: 'Delete a segment of the environment', description: 'A segment that flags or other segments of the environment name through segmentMatch is a 409 segment-in-use naming them (`flags`, `segments`).' })
  @ApiErrors(409)
  @ApiNoContentResponse()
  async remove(@CurrentTenant() tenant: TenantEntity, @Caller() caller: CallerContext, @Headers('x-environment') env: string | undefined, @Param('segmentKey') key: string): Promise<void> {
    await this.segments.remove(tenant.id, env, caller, key);
  }

  @Get(':segmentKey/audit')
  @TenantAccess(READ)
  @ApiOperation({ summary: "A segment's audit trail in the environment, oldest first" })
  @ApiOkResponse({ type: [SegmentAuditEntryDto] })
  async audit(@CurrentTenant() tenant: TenantEntity, @Headers('x-environment') env: string | undefined, @Param('segmentKey') key: string): Promise<SegmentAuditEntryDto[]> {
    return (await this.segments.auditTrail(tenant.id, env, key)).map(toSegmentAuditEntryDto);
  }
}
