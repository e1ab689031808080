import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { TenantEntity } from '@flagship/persistence';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { ApiErrors } from '@flagship/problem-details';
import { CreditsDto } from './credits.dto';
import { CreditsService, type CreditsView } from './credits.service';

/** Every member may see the balance their AI features draw on; client tokens may not (no scope grants billing). */
@ApiTags('billing')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'default: your canonical tenant' })
@Controller('api/billing')
export class CreditsController {
  constructor(private readonly credits: CreditsService) {}

  @Get('credits')
  @TenantAccess({ role: 'viewer' })
  @ApiOperation({ summary: "The tenant's AI credit balance and the part held by requests in flight (micro-credits)" })
  @ApiOkResponse({ type: CreditsDto })
  @ApiErrors(401, 403, 429, 503)
  get(@CurrentTenant() tenant: TenantEntity): Promise<CreditsView> {
    return this.credits.balance(tenant.id);
  }
}
