import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { ManagementApiConfig } from '../env.schema';
import { DrainLoop } from '../flag-changes/drain-loop';
import { RolloutsService } from './rollouts.service';

/**
 * Runs guarded rollouts in every management-api replica, on the scheduled changes' loop and poll
 * (SCHEDULED_CHANGES_POLL_MS; 0 leaves this replica out): each pass claims one binding whose plan
 * needs a decision; exactly once is the claim's row lock, held with the flag write.
 */
@Injectable()
export class RolloutRunner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly loop: DrainLoop;

  constructor(rollouts: RolloutsService, @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'SCHEDULED_CHANGES_POLL_MS'>) {
    this.loop = new DrainLoop('guarded rollouts', config.SCHEDULED_CHANGES_POLL_MS, () => rollouts.runNext(), new Logger('RolloutRunner'));
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.loop.stop();
  }
}
