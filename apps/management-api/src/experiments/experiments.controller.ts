import { Controller, Get, Headers, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors } from '@flagship/problem-details';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { ExperimentQueryDto, ExperimentReportDto } from './experiments.dto';
import { type ExperimentReportView, ExperimentsService } from './experiments.service';

/** The experiment report of a flag bound to a gateway route (CONTRACT.md section 11); billing detail, so admins only, as /api/usage. */
@ApiTags('usage')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'default: your canonical tenant' })
@ApiHeader({ name: 'X-Environment', required: false, description: 'the environment whose off variation is the control (default production)' })
@Controller('api/usage/experiments')
export class ExperimentsController {
  constructor(private readonly experiments: ExperimentsService) {}

  @Get(':flagKey')
  @TenantAccess({ role: 'admin' })
  @ApiOperation({
    summary: 'Per variation of a bound flag: requests, errors, tokens, debits, latency and feedback, with 95% intervals of each difference against the control',
    description:
      'Error rate: Newcombe hybrid score interval; cost per request and feedback: Welch t; p95 latency and time to first token: Maritz–Jarrett standard errors. `warnings` says when samples are too small to decide on. Range: from/to, default the last 7 days, at most 92.',
  })
  @ApiOkResponse({ type: ExperimentReportDto })
  @ApiErrors(401, 403, 404, 422, 429, 503)
  report(@CurrentTenant() tenant: TenantEntity, @Headers('x-environment') env: string | undefined, @Param('flagKey') flagKey: string, @Query() query: ExperimentQueryDto): Promise<ExperimentReportView> {
    return this.experiments.report(tenant.id, env, flagKey, query);
  }
}
