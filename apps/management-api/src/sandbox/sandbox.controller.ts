import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiTags } from '@nestjs/swagger';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { SandboxService } from './sandbox.service';

const READ = { role: 'viewer', scopes: ['flags:read'] } as const;

@ApiTags('sandbox')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false })
@Controller('api/sandbox')
export class SandboxController {
  constructor(private readonly sandbox: SandboxService) {}

  @Get('status')
  @TenantAccess({ ...READ, headerRequired: true })
  status(@CurrentTenant() tenant: TenantEntity) {
    return this.sandbox.status(tenant);
  }

  @Get('indicators')
  @TenantAccess(READ)
  indicators(@CurrentTenant() tenant: TenantEntity) {
    return this.sandbox.indicators(tenant);
  }

  @Get('demo-data')
  @TenantAccess(READ)
  demoData(@CurrentTenant() tenant: TenantEntity) {
    return this.sandbox.demoData(tenant);
  }
}
