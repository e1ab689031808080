import { Body, Controller, Get, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { PageQueryDto, pageLimit, sendPage, type CallerContext } from '@flagship/service-kit';
import { Caller, PlatformAdminOnly, UsersOnly } from '../auth/auth.decorators';
import { pendingSubject } from '../users/user.entity';
import { AdminUserDto, GrantCreditsDto, GrantEntitlementDto, PatchTenantAdminDto } from './admin.dto';
import { AdminService } from './admin.service';

@ApiTags('admin')
@ApiBearerAuth('bearer')
@UsersOnly()
@PlatformAdminOnly()
@Controller('admin')
export class AdminController {
  constructor(private readonly admin: AdminService) {}

  @Get('users')
  @ApiOkResponse({ type: [AdminUserDto] })
  async users(@Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<AdminUserDto[]> {
    const limit = pageLimit(page);
    const rows = sendPage(req, res, await this.admin.listUsers(limit, page.cursor), limit, (u) => ({ at: u.createdAt.toISOString(), id: u.id }));
    return rows.map((u) => ({
      id: u.id,
      email: u.email,
      displayName: u.displayName,
      signInProvider: u.signInProvider,
      pending: u.idpSubject === pendingSubject(u.email),
      lastAccessedAt: u.lastAccessedAt?.toISOString() ?? null,
      createdAt: u.createdAt.toISOString(),
    }));
  }

  @Post('tenants/:tenantId/entitlements')
  grantEntitlement(@Param('tenantId') tenantId: string, @Body() dto: GrantEntitlementDto) {
    return this.admin.grantEntitlement(tenantId, dto);
  }

  @Post('tenants/:tenantId/credits')
  grantCredits(@Param('tenantId') tenantId: string, @Body() dto: GrantCreditsDto, @Caller() caller: CallerContext) {
    return this.admin.grantCredits(tenantId, dto, caller);
  }

  @Patch('tenants/:tenantId')
  patchTenant(@Param('tenantId') tenantId: string, @Body() dto: PatchTenantAdminDto) {
    return this.admin.patchTenant(tenantId, dto);
  }
}
