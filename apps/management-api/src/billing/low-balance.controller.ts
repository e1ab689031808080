import { Body, Controller, Delete, Get, HttpCode, Put, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { PageQueryDto, pageLimit, sendPage } from '@flagship/service-kit';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { LowBalanceAlertDto, LowBalanceCrossingDto, PutLowBalanceAlertDto } from './low-balance.dto';
import { crossingCursor, LowBalanceService, type LowBalanceAlertView, type LowBalanceCrossingView } from './low-balance.service';

/**
 * The tenant's low-balance alert: tenant admins set it and read its crossings (billing detail, as
 * GET /api/usage); client tokens are refused (no scope grants billing).
 */
@ApiTags('billing')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'default: your canonical tenant' })
@ApiErrors(401, 403, 429, 503)
@TenantAccess({ role: 'admin' })
@Controller('api/billing/low-balance-alert')
export class LowBalanceController {
  constructor(private readonly alerts: LowBalanceService) {}

  @Get()
  @ApiOperation({ summary: "The tenant's low-balance threshold (null: none), whether it is armed, and whether the balance is at or below it now" })
  @ApiOkResponse({ type: LowBalanceAlertDto })
  get(@CurrentTenant() tenant: TenantEntity): Promise<LowBalanceAlertView> {
    return this.alerts.get(tenant.id);
  }

  @Put()
  @ApiOperation({ summary: 'Set the low-balance threshold; armed only while the balance is above it' })
  @ApiErrors(...BODY_ERRORS)
  @ApiOkResponse({ type: LowBalanceAlertDto })
  put(@CurrentTenant() tenant: TenantEntity, @Body() dto: PutLowBalanceAlertDto): Promise<LowBalanceAlertView> {
    return this.alerts.set(tenant.id, dto.threshold);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove the low-balance threshold (its recorded crossings stay)' })
  @ApiNoContentResponse({ description: 'removed, or there was none' })
  async remove(@CurrentTenant() tenant: TenantEntity): Promise<void> {
    await this.alerts.remove(tenant.id);
  }

  @Get('crossings')
  @ApiOperation({ summary: 'Recorded crossings of the threshold, newest first, paginated (Link rel="next")' })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [LowBalanceCrossingDto], headers: { Link: { description: '`<...>; rel="next"` when another page exists', schema: { type: 'string' } } } })
  async crossings(@CurrentTenant() tenant: TenantEntity, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<LowBalanceCrossingView[]> {
    const limit = pageLimit(page);
    const rows = await this.alerts.crossings(tenant.id, { limit, cursor: page.cursor });
    return sendPage(req, res, rows, limit, crossingCursor);
  }
}
