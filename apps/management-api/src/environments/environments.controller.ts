import { Body, Controller, Get, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { CreateEnvironmentDto, EnvironmentDto } from './environments.dto';
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
}
