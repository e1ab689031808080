import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { Request, Response } from 'express';
import { PageQueryDto, pageLimit, sendPage, type CallerContext } from '@flagship/service-kit';
import type { TenantEntity } from '@flagship/persistence';
import { Caller, CurrentTenant, CurrentUser, TenantAccess, UsersOnly } from '../auth/auth.decorators';
import type { UserEntity } from '../users/user.entity';
import { InvitationsService } from './invitations.service';
import { AddTenantUserDto, CreateTenantDto, InvitationDto, TenantDto, TenantUserDto, UpdateTenantUserDto } from './tenants.dto';
import { TenantsService, toTenantUserDto } from './tenants.service';

@ApiTags('tenants')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 429, 503)
@Controller('api/tenants')
export class TenantsController {
  constructor(
    private readonly tenants: TenantsService,
    private readonly invitations: InvitationsService,
  ) {}

  @Get()
  @ApiOperation({ summary: "The caller's tenants with their role in each" })
  @ApiOkResponse({ type: [TenantDto] })
  list(@Caller() caller: CallerContext, @CurrentUser() user?: UserEntity) {
    return this.tenants.list(caller, user);
  }

  @Post()
  @UsersOnly()
  @ApiOperation({ summary: 'Create a tenant; the caller becomes its admin' })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: TenantDto })
  create(@Body() dto: CreateTenantDto, @CurrentUser() user: UserEntity) {
    return this.tenants.create(user, dto);
  }

  @Get(':tenantId/users')
  @TenantAccess({ role: 'viewer', tenantFrom: 'path' })
  @ApiOperation({ summary: "A tenant's members (paginated)" })
  @ApiErrors(400, 404, 422)
  @ApiOkResponse({ type: [TenantUserDto] })
  async users(@CurrentTenant() tenant: TenantEntity, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response) {
    const limit = pageLimit(page);
    const rows = await this.tenants.listUsers(tenant.id, { ...page, limit });
    return sendPage(req, res, rows, limit, (r) => ({ at: r.membership.createdAt.toISOString(), id: r.user.id })).map(toTenantUserDto);
  }

  @Post(':tenantId/users')
  @TenantAccess({ role: 'admin', tenantFrom: 'path' })
  @ApiOperation({ summary: 'Invite someone by e-mail with a role: a pending invitation they accept or decline (the same answer whether or not the e-mail has an account)' })
  @ApiErrors(...BODY_ERRORS, 404, 409)
  @ApiCreatedResponse({ type: InvitationDto, description: 'the pending invitation (an existing pending one for this e-mail takes the new role)' })
  addUser(@CurrentTenant() tenant: TenantEntity, @CurrentUser() user: UserEntity | undefined, @Body() dto: AddTenantUserDto) {
    return this.invitations.invite(tenant.id, user, dto);
  }

  @Get(':tenantId/invitations')
  @TenantAccess({ role: 'admin', tenantFrom: 'path' })
  @ApiOperation({ summary: "The tenant's pending invitations" })
  @ApiErrors(404)
  @ApiOkResponse({ type: [InvitationDto] })
  invitationsOf(@CurrentTenant() tenant: TenantEntity) {
    return this.invitations.pendingOfTenant(tenant.id);
  }

  @Delete(':tenantId/invitations/:invitationId')
  @TenantAccess({ role: 'admin', tenantFrom: 'path' })
  @HttpCode(204)
  @ApiOperation({ summary: 'Withdraw a pending invitation' })
  @ApiErrors(404)
  @ApiNoContentResponse()
  withdrawInvitation(@CurrentTenant() tenant: TenantEntity, @Param('invitationId') invitationId: string): Promise<void> {
    return this.invitations.withdraw(tenant.id, invitationId);
  }

  @Patch(':tenantId/users/:userId')
  @TenantAccess({ role: 'admin', tenantFrom: 'path' })
  @ApiOperation({ summary: "Change a member's role (the last admin cannot step down: 409)" })
  @ApiErrors(...BODY_ERRORS, 404, 409)
  @ApiOkResponse({ type: TenantUserDto })
  changeRole(@CurrentTenant() tenant: TenantEntity, @Param('userId') userId: string, @Body() dto: UpdateTenantUserDto) {
    return this.tenants.changeRole(tenant.id, userId, dto.role);
  }

  @Delete(':tenantId/users/:userId')
  @TenantAccess({ role: 'admin', tenantFrom: 'path' })
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a member (never the last admin: 409)' })
  @ApiErrors(404, 409)
  @ApiNoContentResponse()
  removeUser(@CurrentTenant() tenant: TenantEntity, @Param('userId') userId: string): Promise<void> {
    return this.tenants.removeUser(tenant.id, userId);
  }
}
