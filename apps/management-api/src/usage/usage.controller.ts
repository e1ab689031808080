import { Controller, Get, Inject, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { pageLimit, sendAttachment, sendPage } from '@flagship/service-kit';
import { APP_CONFIG } from '@flagship/config';
import { CurrentPrincipal, CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import type { TenantPrincipal } from '../auth/tenant-access.resolver';
import type { ManagementApiConfig } from '../env.schema';
import { UsageExportAdmission } from './usage-export-admission';
import { ApiErrors } from '@flagship/problem-details';
import { ListUsageQueryDto, UsageDailyDto, UsageFilterDto, UsageRowDto, UsageSummaryDto } from './usage.dto';
import { usageCursor, type UsageDailyView, UsageService, type UsageRowView, type UsageSummaryView } from './usage.service';
import { ExportUsageQueryDto, USAGE_EXPORT_MAX_DAYS } from './usage-export.dto';
import { UsageExportService } from './usage-export.service';

/**
 * The tenant's AI gateway ledger. Billing detail, so tenant admins only; client tokens are refused
 * (no scope grants billing data). The list stays a plain array like every list; totals for the same
 * filter are their own resource.
 */
@ApiTags('usage')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'default: your canonical tenant' })
@Controller('api/usage')
export class UsageController {
  constructor(
    private readonly usage: UsageService,
    private readonly exports: UsageExportService,
    private readonly admission: UsageExportAdmission,
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
  ) {}

  @Get()
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'AI gateway usage rows of the tenant, newest first, filtered and paginated (Link rel="next")' })
  @ApiOkResponse({ type: [UsageRowDto], headers: { Link: { description: '`<...>; rel="next"` when another page exists', schema: { type: 'string' } } } })
  @ApiErrors(400, 401, 403, 422, 429, 503)
  async list(@CurrentTenant() tenant: TenantEntity, @Query() query: ListUsageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<UsageRowView[]> {
    const limit = pageLimit(query);
    const rows = await this.usage.list(tenant.id, query, { limit, cursor: query.cursor });
    return sendPage(req, res, rows, limit, usageCursor);
  }

  @Get('summary')
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'Requests, tokens and debits of the same filter as GET /api/usage, in total and per product key and model' })
  @ApiOkResponse({ type: UsageSummaryDto })
  @ApiErrors(401, 403, 422, 429, 503)
  summary(@CurrentTenant() tenant: TenantEntity, @Query() query: UsageFilterDto): Promise<UsageSummaryView> {
    return this.usage.summary(tenant.id, query);
  }

  @Get('daily')
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'The summary of the same filter per UTC day, product key and model (the console\'s chart)' })
  @ApiOkResponse({ type: UsageDailyDto })
  @ApiErrors(401, 403, 422, 429, 503)
  daily(@CurrentTenant() tenant: TenantEntity, @Query() query: UsageFilterDto): Promise<UsageDailyView> {
    return this.usage.daily(tenant.id, query);
  }

  @Get('export')
  @TenantAccess({ role: 'admin' })
  @ApiOperation({
    summary: 'Download the rows of the same filter as GET /api/usage as a file for finance (CSV or JSON lines), oldest first',
    description: `Streamed: any size of range is sent without being held in memory. from and to are required, at most ${USAGE_EXPORT_MAX_DAYS} days apart (a 422 otherwise). CSV is RFC 4180 with a header row; a text cell a spreadsheet would run as a formula (starting with = + - @) is prefixed with '. A download that breaks after it started ends with a closed connection, never a short file that looks whole. Per server a tenant runs at most USAGE_EXPORTS_PER_TENANT exports at once and a person or OAuth client USAGE_EXPORTS_PER_CALLER across their tenants (429 too-many-exports, per naming the bound), the server USAGE_EXPORTS_PER_PROCESS (503); a download whose client reads nothing for USAGE_EXPORT_IDLE_SECONDS is closed.`,
  })
  @ApiProduces('text/csv', 'application/jsonl')
  @ApiOkResponse({
    description: 'the file, as an attachment',
    content: { 'text/csv': { schema: { type: 'string' } }, 'application/jsonl': { schema: { type: 'string' } } },
    headers: { 'Content-Disposition': { description: '`attachment; filename="usage-20261101T000000Z-20261201T000000Z.csv"`', schema: { type: 'string' } } },
  })
  @ApiErrors(401, 403, 422, 429, 503)
  async export(@CurrentPrincipal() principal: TenantPrincipal, @Query() query: ExportUsageQueryDto, @Res() res: Response): Promise<void> {
    const running = { tenantId: principal.tenant.id, callerId: principal.caller.callerId };
    this.admission.admit(running);
    try {
      await sendAttachment(res, await this.exports.open(principal.tenant.id, query), { idleMs: this.config.USAGE_EXPORT_IDLE_SECONDS * 1000 });
    } finally {
      this.admission.release(running);
    }
  }
}
