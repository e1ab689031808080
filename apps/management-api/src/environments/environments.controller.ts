import { Body, Controller, Get, Param, Patch, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { CreateEnvironmentDto, EnvironmentDto, UpdateEnvironmentDto } from './environments.dto';
import { EnvironmentsService } from './environments.service';

@ApiTags('environments')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@Controller('api/environments')
export class EnvironmentsController {
  constructor(private readonly environments: EnvironmentsService) {}

  @Get()
  @TenantAccess({ role: 'viewer', scopes: ['flags:read'] })
  @ApiOperation({ summary: "The tenant's environments" })
  @ApiOkResponse({ type: [EnvironmentDto] })
  list(@CurrentTenant() tenant: TenantEntity) {
    return this.environments.list(tenant.id);
  }

  @Post()
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'Create an environment' })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: EnvironmentDto })
  create(@CurrentTenant() tenant: TenantEntity, @Body() dto: CreateEnvironmentDto) {
    return this.environments.create(tenant.id, dto);
  }

  @Patch(':environmentKey')
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: 'Rename an environment, or require approval of changes to its flags (requireApproval)' })
  @ApiErrors(...BODY_ERRORS)
  @ApiOkResponse({ type: EnvironmentDto })
  update(@CurrentTenant() tenant: TenantEntity, @Param('environmentKey') key: string, @Body() dto: UpdateEnvironmentDto) {
    return this.environments.update(tenant.id, key, dto);
  }
}
