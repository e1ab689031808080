import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { ManagementApiConfig } from '../env.schema';
import { DrainLoop } from './drain-loop';
import { ScheduledChangesService } from './scheduled-changes.service';

/**
 * Runs due scheduled changes in every management-api replica: billing-worker's JobScheduler cannot
 * reach FlagsService (an app's code, not a lib's), and a schedule must pass the same rules, limits,
 * audit and change announcement as a PATCH. The exactly-once guarantee is Postgres' (the row lock
 * taken with the flag write), not this loop's, so replicas need no leader. It drains what is due,
 * waits SCHEDULED_CHANGES_POLL_MS when nothing is, backs off while a pass fails, and stops with the app.
 */
@Injectable()
export class ScheduledChangesRunner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly loop: DrainLoop;

  constructor(schedules: ScheduledChangesService, @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'SCHEDULED_CHANGES_POLL_MS'>) {
    this.loop = new DrainLoop('scheduled changes', config.SCHEDULED_CHANGES_POLL_MS, () => schedules.executeNext(), new Logger('ScheduledChangesRunner'));
  }

  onApplicationBootstrap(): void {
    this.loop.start();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.loop.stop();
  }
}
