import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { EvaluationContext } from '@flagship/flag-evaluation';
import { FlagStore } from '@flagship/flag-store';
import { ProblemException } from '@flagship/problem-details';
import { EnvironmentsService } from '../../environments/environments.service';
import type { ManagementApiConfig } from '../../env.schema';
import { EvaluationCounter } from '../evaluation-counter';
import { toEvaluationDto } from '../flag.mapper';
import type { EvaluationResultDto } from '../flags.dto';
import { flagNotFound, FlagProblems } from '../flags.errors';

/**
 * Evaluates from the tenant-environment's compiled set held in memory (FlagStore): no query per
 * call once warm. A held set also proves the environment exists, so it is not looked up again.
 */
@Injectable()
export class EvaluateService {
  private readonly maxFlagBytes: number;

  constructor(
    @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'FLAG_MAX_BYTES'>,
    @Inject(FlagStore) private readonly store: Pick<FlagStore, 'peek' | 'view'>,
    @Inject(EnvironmentsService) private readonly environments: Pick<EnvironmentsService, 'resolve'>,
    @Inject(EvaluationCounter) private readonly counter: Pick<EvaluationCounter, 'count'>,
  ) {
    this.maxFlagBytes = config.FLAG_MAX_BYTES;
  }

  async evaluate(tenantId: string, env: string | undefined, key: string, context: EvaluationContext, projectId?: string): Promise<EvaluationResultDto> {
    const environment = env === undefined || env === '' ? 'production' : env;
    const view = this.store.peek(tenantId, environment) ?? (await this.store.view(tenantId, await this.environments.resolve(tenantId, env)));
    const flag = view.set.get(key);
    if (!flag) {
      const bytes = view.refused.get(key);
      if (bytes === undefined || (projectId !== undefined && view.projects.get(key) !== projectId)) throw flagNotFound(key);
      throw new ProblemException(
        FlagProblems['flag-too-large'],
        `Flag ${key}'s definition in ${environment} takes ${bytes} bytes, over the ${this.maxFlagBytes} a flag may take; it is not evaluated until it is made smaller.`,
        { bytes, limit: this.maxFlagBytes },
      );
    }
    const result = view.set.evaluate(flag, context);
    if (projectId !== undefined && view.projects.get(key) !== projectId) throw flagNotFound(key);
    this.counter.count(tenantId, environment, key);
    return toEvaluationDto(key, result);
  }
}
