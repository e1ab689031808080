import { Body, Controller, Get, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { Request, Response } from 'express';
import { PageQueryDto, pageLimit, sendPage, type CallerContext } from '@flagship/service-kit';
import { Caller, PlatformAdminOnly, UsersOnly } from '../auth/auth.decorators';
import { isPendingUser } from '../users/user.entity';
import { AdminTenantDto, AdminUserDto, CreditBalanceDto, EntitlementDto, GrantCreditsDto, GrantEntitlementDto, PatchTenantAdminDto } from './admin.dto';
import { AdminService } from './admin.service';

@ApiTags('admin')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 429, 503)
@UsersOnly()
@PlatformAdminOnly()
@Controller('admin')
export class AdminController {
  constructor(private readonly admin: AdminService) {}

  @Get('users')
  @ApiOperation({ summary: 'Every user of the platform (platform admins, paginated)' })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [AdminUserDto] })
  async users(@Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<AdminUserDto[]> {
    const limit = pageLimit(page);
    const rows = sendPage(req, res, await this.admin.listUsers(limit, page.cursor), limit, (u) => ({ at: u.createdAt.toISOString(), id: u.id }));
    return rows.map((u) => ({
      id: u.id,
      email: u.email,
      displayName: u.displayName,
      signInProvider: u.signInProvider,
      pending: isPendingUser(u),
      lastAccessedAt: u.lastAccessedAt?.toISOString() ?? null,
      createdAt: u.createdAt.toISOString(),
    }));
  }

  @Post('tenants/:tenantId/entitlements')
  @ApiOperation({ summary: 'Grant a tenant an entitlement to a product tier' })
  @ApiErrors(...BODY_ERRORS, 404)
  @ApiCreatedResponse({ type: EntitlementDto })
  grantEntitlement(@Param('tenantId') tenantId: string, @Body() dto: GrantEntitlementDto): Promise<EntitlementDto> {
    return this.admin.grantEntitlement(tenantId, dto);
  }

  @Post('tenants/:tenantId/credits')
  @ApiOperation({ summary: 'Grant a tenant AI credits' })
  @ApiErrors(...BODY_ERRORS, 404)
  @ApiCreatedResponse({ type: CreditBalanceDto })
  grantCredits(@Param('tenantId') tenantId: string, @Body() dto: GrantCreditsDto, @Caller() caller: CallerContext): Promise<CreditBalanceDto> {
    return this.admin.grantCredits(tenantId, dto, caller);
  }

  @Patch('tenants/:tenantId')
  @ApiOperation({ summary: "Set a tenant's zero-rating and hosted-provider permission" })
  @ApiErrors(...BODY_ERRORS, 404)
  @ApiOkResponse({ type: AdminTenantDto })
  patchTenant(@Param('tenantId') tenantId: string, @Body() dto: PatchTenantAdminDto): Promise<AdminTenantDto> {
    return this.admin.patchTenant(tenantId, dto);
  }
}
