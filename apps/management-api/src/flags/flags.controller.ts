import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors, BODY_ERRORS, validationProblem } from '@flagship/problem-details';
import { pageLimit, sendPage, type CallerContext } from '@flagship/service-kit';
import { Caller, CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { CreateFlagDto, CreateProjectFlagDto, ImportFlagsResultDto, ListFlagsQueryDto, FlagDto, FlagVariationDto, UpdateFlagDto } from './flags.dto';
import { FlagAuditEntryDto } from './flag-audit.dto';
import { FlagImportService } from './flag-import.service';
import { etagOf, toAuditEntryDto, toFlagDto, toImportResultDto } from './flag.mapper';
import { FlagExportDto } from './flag-targeting.dto';
import type { FlagRow } from './flags.repository';
import { FlagsService } from './flags.service';

const READ = { role: 'viewer', scopes: ['flags:read'] } as const;
const WRITE = { role: 'editor', scopes: ['flags:write'] } as const;

function withEtag(res: Response, row: FlagRow): FlagDto {
  res.setHeader('ETag', etagOf(row));
  return toFlagDto(row);
}

/** A LaunchDarkly flag or segment in the import body: an object with any fields. */
const LD_OBJECT = { type: 'object', additionalProperties: true } as const;

@ApiTags('flags')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'required for users on list, create and read' })
@ApiHeader({ name: 'X-Environment', required: false, description: 'environment key, default production' })
/** Flag management. Evaluation (`POST .../evaluate`) is the evaluate route's, answered outside Nest: see evaluate/evaluate.route.ts. */
@Controller('api/flags')
export class FlagsController {
  constructor(
    private readonly flags: FlagsService,
    private readonly imports: FlagImportService,
  ) {}

  @Get()
  @TenantAccess({ ...READ, headerRequired: true })
  @ApiOperation({ summary: 'List flags as seen in the environment (paginated); lifecycle=stale lists those not evaluated, or serving one value to everyone, for staleAfterDays days' })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [FlagDto] })
  async list(
    @CurrentTenant() tenant: TenantEntity,
    @Headers('x-environment') env: string | undefined,
    @Query() page: ListFlagsQueryDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ) {
    const limit = pageLimit(page);
    const rows = await this.flags.list(tenant.id, env, limit, page.cursor, page.projectId, { lifecycle: page.lifecycle, staleAfterDays: page.staleAfterDays });
    return sendPage(req, res, rows, limit, (r) => ({ at: r.flag.createdAt.toISOString(), id: r.flag.id })).map(toFlagDto);
  }

  @Post()
  @TenantAccess({ ...WRITE, headerRequired: true })
  @ApiOperation({ summary: 'Create a flag' })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: FlagDto })
  async create(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Body() dto: CreateFlagDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    return withEtag(res, await this.flags.create(tenant.id, env, caller, dto));
  }

  @Post('import')
  @HttpCode(200)
  @TenantAccess(WRITE)
  @ApiOperation({
    summary: "Import flags from LaunchDarkly's server-side SDK data into the request's environment",
    description:
      'Body: LaunchDarkly SDK data as in its SDK data files or the relay proxy\'s /sdk/latest-all ({"flags": {key: flag}, "segments": {key: segment}}), or an array of flags. ' +
      'Each segment is created or replaced by key in this environment (X-Environment), and each flag created, or its variations and its targeting in this environment replaced; salts and seeds are kept so every context keeps its bucket. ' +
      "A flag's segmentMatch may name a segment of the same import or one already in the environment. " +
      'What cannot be expressed (big segments, experiments) or is malformed, in a flag or a segment, is a 422 naming it by path (flags.<key>..., segments.<key>...), and nothing is written. ' +
      'Segments count against their own quotas (QUOTA_SEGMENTS_PER_TENANT, QUOTA_SEGMENT_BYTES_PER_TENANT), flags against theirs, all in the same transaction. ' +
      'A flag whose definition would pass FLAG_MAX_BYTES (default 32768) is a 422 naming it (flags.<key>), and flags that together would pass the byte quota (QUOTA_FLAG_BYTES_PER_TENANT) a 409 quota-exceeded: the import is written whole or not at all. ' +
      'One import per tenant at a time: another one under way is a 409 import-in-progress with Retry-After. ' +
      'Where approval is required, an import into that environment, or one replacing existing flags (their variations are every environment\'s), is a 409 approval-required.',
  })
  @ApiBody({
    // Flags are LaunchDarkly's own objects, with fields of their own: open objects, not empty ones.
    schema: {
      oneOf: [
        {
          type: 'object',
          properties: {
            flags: { oneOf: [{ type: 'object', additionalProperties: LD_OBJECT }, { type: 'array', items: LD_OBJECT }] },
            segments: { oneOf: [{ type: 'object', additionalProperties: true }, { type: 'array', items: LD_OBJECT }] },
            flagValues: { type: 'object', additionalProperties: true },
          },
        },
        { type: 'array', items: LD_OBJECT },
      ],
    },
    examples: {
      sdkData: {
        value: { flags: { 'new-checkout': { key: 'new-checkout', on: true, variations: [true, false], offVariation: 1, fallthrough: { rollout: { variations: [{ variation: 0, weight: 25000 }, { variation: 1, weight: 75000 }], seed: 61 } }, targets: [], rules: [], prerequisites: [], salt: 'a1b2' } } },
      },
    },
  })
  @ApiOkResponse({ type: ImportFlagsResultDto, description: 'what was created, replaced and skipped, and every imported flag with its warnings' })
  @ApiErrors(400, 409, 413, 415, 422)
  async importLaunchDarkly(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Req() req: Request,
  ): Promise<ImportFlagsResultDto> {
    // The parsed body as it is: the global pipe takes only objects, and a plain array of flags is accepted here.
    return toImportResultDto(await this.imports.importLaunchDarkly(tenant.id, env, caller, req.body as unknown));
  }

  /** The flag file orep-server serves (OREP_FLAGS_FILE). */
  @Get('export')
  @TenantAccess(READ)
  @ApiOperation({
    summary: "Export an environment's flags as orep-server's flag file",
    description:
      'Bounded as evaluations are: a flag over FLAG_MAX_BYTES (stored before that limit) is left out, and an environment whose flags pass FLAG_SET_MAX_BYTES is a 409 flag-set-too-large.',
  })
  @ApiQuery({ name: 'environment', required: false })
  @ApiOkResponse({ type: FlagExportDto })
  @ApiErrors(409)
  export(@CurrentTenant() tenant: TenantEntity, @Query('environment') environment: string | undefined, @Headers('x-environment') env: string | undefined) {
    return this.flags.export(tenant.id, typeof environment === 'string' ? environment : env);
  }

  @Post('projects/:projectId/flags')
  @TenantAccess(WRITE)
  @ApiOperation({ summary: 'Create a flag in a project' })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: FlagDto })
  async createInProject(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Param('projectId') projectId: string,
    @Body() dto: CreateProjectFlagDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    if (dto.projectId !== undefined && dto.projectId !== projectId) throw validationProblem({ projectId: 'differs from the project in the path' });
    return withEtag(res, await this.flags.create(tenant.id, env, caller, dto, projectId));
  }

  @Get(':flagKey')
  @TenantAccess({ ...READ, headerRequired: true })
  @ApiOperation({ summary: 'Get a flag as seen in the environment, with its ETag' })
  @ApiErrors(400)
  @ApiOkResponse({ type: FlagDto })
  async get(@CurrentTenant() tenant: TenantEntity, @Headers('x-environment') env: string | undefined, @Param('flagKey') key: string, @Res({ passthrough: true }) res: Response) {
    return withEtag(res, await this.flags.get(tenant.id, env, key));
  }

  @Patch(':flagKey')
  @TenantAccess(WRITE)
  @ApiOperation({
    summary: 'Update a flag (If-Match for optimistic concurrency)',
    description:
      "In an environment that requires approval, a change to the flag's targeting there is 409 approval-required, and so is a change to variations, defaultValue or clientSideAvailability while any environment requires it: POST .../change-requests instead.",
  })
  @ApiErrors(...BODY_ERRORS, 412)
  @ApiHeader({ name: 'If-Match', required: false, description: 'the ETag read; a stale one is 412' })
  @ApiOkResponse({ type: FlagDto })
  async update(
    @CurrentTenant() tenant: TenantEntity,
    @Caller() caller: CallerContext,
    @Headers('x-environment') env: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Param('flagKey') key: string,
    @Body() dto: UpdateFlagDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    return withEtag(res, await this.flags.update(tenant.id, env, caller, key, dto, ifMatch));
  }

  @Delete(':flagKey')
  @HttpCode(204)
  @TenantAccess(WRITE)
  @ApiOperation({
    summary: 'Delete a flag in every environment',
    description: 'A flag other flags name as a prerequisite is 409 flag-in-use; one switched on in an environment that requires approval is 409 approval-required (switch it off there through a change request first).',
  })
  @ApiErrors(409)
  @ApiNoContentResponse()
  async remove(@CurrentTenant() tenant: TenantEntity, @Caller() caller: CallerContext, @Param('flagKey') key: string): Promise<void> {
    await this.flags.remove(tenant.id, caller, key);
  }

  @Get(':flagKey/variations')
  @TenantAccess(READ)
  @ApiOperation({ summary: "List a flag's variations" })
  @ApiOkResponse({ type: [FlagVariationDto] })
  variations(@CurrentTenant() tenant: TenantEntity, @Param('flagKey') key: string) {
    return this.flags.variations(tenant.id, key);
  }

  @Get(':flagKey/audit')
  @TenantAccess(READ)
  @ApiOperation({ summary: "A flag's audit trail, oldest first" })
  @ApiOkResponse({ type: [FlagAuditEntryDto] })
  async audit(@CurrentTenant() tenant: TenantEntity, @Param('flagKey') key: string): Promise<FlagAuditEntryDto[]> {
    return (await this.flags.auditTrail(tenant.id, key)).map(toAuditEntryDto);
  }
}
