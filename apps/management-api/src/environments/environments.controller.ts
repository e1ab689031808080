import { Body, Controller, Get, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { CreateEnvironmentDto, EnvironmentDto } from './environments.dto';
import { EnvironmentsService } from './environments.service';

@ApiTags('environments')
@ApiBearerAuth('bearer')
@Controller('api/environments')
export class EnvironmentsController {
  constructor(private readonly environments: EnvironmentsService) {}

  @Get()
  @TenantAccess({ role: 'viewer', scopes: ['flags:read'] })
  @ApiOkResponse({ type: [EnvironmentDto] })
  list(@CurrentTenant() tenant: TenantEntity) {
    return this.environments.list(tenant.id);
  }

  @Post()
  @TenantAccess({ role: 'admin' })
  @ApiCreatedResponse({ type: EnvironmentDto })
  create(@CurrentTenant() tenant: TenantEntity, @Body() dto: CreateEnvironmentDto) {
    return this.environments.create(tenant.id, dto);
  }
}
