import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { Request, Response } from 'express';
import { PageQueryDto, pageLimit, sendPage, type CallerContext } from '@flagship/service-kit';
import type { TenantEntity } from '@flagship/persistence';
import { Caller, CurrentTenant, CurrentUser, TenantAccess, UsersOnly } from '../auth/auth.decorators';
import type { UserEntity } from '../users/user.entity';
import { AddTenantUserDto, CreateTenantDto, TenantDto, TenantUserDto, UpdateTenantUserDto } from './tenants.dto';
import { TenantsService, toTenantUserDto } from './tenants.service';

@ApiTags('tenants')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 429, 503)
@Controller('api/tenants')
export class TenantsController {
  constructor(private readonly tenants: TenantsService) {}

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
  @ApiOperation({ summary: 'Add a user to a tenant with a role' })
  @ApiErrors(...BODY_ERRORS, 404)
  @ApiCreatedResponse({ type: TenantUserDto })
  addUser(@CurrentTenant() tenant: TenantEntity, @Body() dto: AddTenantUserDto) {
    return this.tenants.addUser(tenant.id, dto);
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
  @ApiOperation({ summary: 'Remove a member, or withdraw the invitation of one who never signed in (never the last admin: 409)' })
  @ApiErrors(404, 409)
  @ApiNoContentResponse()
  removeUser(@CurrentTenant() tenant: TenantEntity, @Param('userId') userId: string): Promise<void> {
    return this.tenants.removeUser(tenant.id, userId);
  }
}
