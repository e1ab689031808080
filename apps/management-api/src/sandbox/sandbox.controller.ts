import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '@flagship/problem-details';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { SandboxDemoDataDto, SandboxIndicatorsDto, SandboxStatusDto } from './sandbox.dto';
import { SandboxService } from './sandbox.service';

const READ = { role: 'viewer', scopes: ['flags:read'] } as const;

@ApiTags('sandbox')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false })
@Controller('api/sandbox')
export class SandboxController {
  constructor(private readonly sandbox: SandboxService) {}

  @Get('status')
  @TenantAccess({ ...READ, headerRequired: true })
  @ApiOperation({ summary: "The sandbox's state for the tenant" })
  @ApiErrors(400)
  @ApiOkResponse({ type: SandboxStatusDto })
  status(@CurrentTenant() tenant: TenantEntity): SandboxStatusDto {
    return this.sandbox.status(tenant);
  }

  @Get('indicators')
  @TenantAccess(READ)
  @ApiOperation({ summary: 'Usage indicators of the sandbox (flags, evaluations)' })
  @ApiOkResponse({ type: SandboxIndicatorsDto })
  indicators(@CurrentTenant() tenant: TenantEntity): Promise<SandboxIndicatorsDto> {
    return this.sandbox.indicators(tenant);
  }

  @Get('demo-data')
  @TenantAccess(READ)
  @ApiOperation({ summary: 'Demo flags and contexts to try the sandbox with' })
  @ApiOkResponse({ type: SandboxDemoDataDto })
  demoData(@CurrentTenant() tenant: TenantEntity): Promise<SandboxDemoDataDto> {
    return this.sandbox.demoData(tenant);
  }
}
