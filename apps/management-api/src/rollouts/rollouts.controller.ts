import { Controller, Get, HttpStatus, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { TenantEntity } from '@flagship/persistence';
import { ApiErrors, ProblemException, registerProblemTypes } from '@flagship/problem-details';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { RolloutViewDto } from './rollouts.dto';
import { RolloutsRepository } from './rollouts.repository';

export const RolloutProblems = registerProblemTypes({
  'rollout-not-found': { status: HttpStatus.NOT_FOUND, title: 'No gateway binding, so no rollout, for this product key' },
});

/** A binding's guarded rollout: its plan, where it stands, and the decision log (CONTRACT.md section 11). */
@ApiTags('gateway')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false, description: 'default: your canonical tenant' })
@Controller('api/gateway/bindings')
export class RolloutsController {
  constructor(private readonly repo: RolloutsRepository) {}

  @Get(':productKey/rollout')
  @TenantAccess({ role: 'admin' })
  @ApiOperation({ summary: "The binding's rollout plan, its state and its decision log (started, advanced, held, rolled back, completed, stopped, paused) with reasons and figures" })
  @ApiOkResponse({ type: RolloutViewDto })
  @ApiErrors(401, 403, 404, 429, 503)
  async rollout(@CurrentTenant() tenant: TenantEntity, @Param('productKey') productKey: string): Promise<RolloutViewDto> {
    const binding = /^[a-z0-9_]{1,64}$/.test(productKey) ? await this.repo.binding(tenant.id, productKey) : null;
    if (!binding) throw new ProblemException(RolloutProblems['rollout-not-found'], `No gateway binding for product ${productKey} in this tenant.`);
    const [state, decisions] = await Promise.all([this.repo.state(tenant.id, productKey), this.repo.decisions(tenant.id, productKey)]);
    return {
      productKey,
      flagKey: binding.flagKey,
      plan: binding.rolloutPlan,
      state: state && {
        bindingVersion: state.bindingVersion,
        status: state.status,
        stage: state.stage,
        stageStartedAt: state.stageStartedAt.toISOString(),
        controlVariationId: state.controlId,
        treatmentVariationId: state.treatmentId,
        flagVersion: state.flagVersion,
        lastReason: state.lastReason,
        nextCheckAt: state.nextCheckAt.toISOString(),
      },
      decisions: decisions.map((d) => ({ id: d.id, at: d.createdAt.toISOString(), decision: d.decision, bindingVersion: d.bindingVersion, flagKey: d.flagKey, stage: d.stage, percent: d.percent, reason: d.reason, figures: d.figures, flagVersion: d.flagVersion })),
    };
  }
}
