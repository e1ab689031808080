import { Body, Controller, Delete, Get, HttpCode, Param, Put, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import { PageQueryDto, pageLimit, sendPage } from '@flagship/service-kit';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { BudgetDto, BudgetPathDto, PutBudgetDto } from './budgets.dto';
import { budgetCursor, BudgetsService, type BudgetView } from './budgets.service';

/**
 * Monthly AI budgets per OAuth client and per product key: tenant admins set them; the gateway refuses
 * a request its budget does not cover with 402 budget_exceeded. Client tokens are refused (no scope
 * grants billing).
 */
@ApiTags('billing')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'default: your canonical tenant' })
@ApiErrors(401, 403, 429, 503)
@TenantAccess({ role: 'admin' })
@Controller('api/billing/budgets')
export class BudgetsController {
  constructor(private readonly budgets: BudgetsService) {}

  @Get()
  @ApiOperation({ summary: "The tenant's budgets, oldest first, each with what this month (UTC) has spent and holds under it; paginated (Link rel=\"next\")" })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [BudgetDto], headers: { Link: { description: '`<...>; rel="next"` when another page exists', schema: { type: 'string' } } } })
  async list(@CurrentTenant() tenant: TenantEntity, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<BudgetView[]> {
    const limit = pageLimit(page);
    return sendPage(req, res, await this.budgets.list(tenant.id, { limit, cursor: page.cursor }), limit, budgetCursor);
  }

  @Put(':kind/:scopeId')
  @ApiOperation({ summary: "Set (or change) the monthly cap of an OAuth client's or a product key's budget" })
  @ApiErrors(...BODY_ERRORS, 404, 409)
  @ApiOkResponse({ type: BudgetDto })
  put(@CurrentTenant() tenant: TenantEntity, @Param() path: BudgetPathDto, @Body() dto: PutBudgetDto): Promise<BudgetView> {
    return this.budgets.set(tenant.id, path.kind, path.scopeId, dto.monthlyCapMicroCredits);
  }

  @Delete(':kind/:scopeId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a budget: its requests are no longer limited (what this month spent under it stays on record)' })
  @ApiErrors(404, 422)
  @ApiNoContentResponse({ description: 'removed' })
  async remove(@CurrentTenant() tenant: TenantEntity, @Param() path: BudgetPathDto): Promise<void> {
    await this.budgets.remove(tenant.id, path.kind, path.scopeId);
  }
}
