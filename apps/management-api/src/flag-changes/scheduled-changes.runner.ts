import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { ManagementApiConfig } from '../env.schema';
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
  private readonly logger = new Logger('ScheduledChangesRunner');
  private readonly abort = new AbortController();
  private loop?: Promise<void>;
  private wake?: () => void;

  constructor(
    private readonly schedules: ScheduledChangesService,
    @Inject(APP_CONFIG) private readonly config: Pick<ManagementApiConfig, 'SCHEDULED_CHANGES_POLL_MS'>,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.SCHEDULED_CHANGES_POLL_MS > 0) this.loop = this.run();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.abort.abort();
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.abort.signal.aborted) {
      let wait = this.config.SCHEDULED_CHANGES_POLL_MS;
      try {
        while (!this.abort.signal.aborted && (await this.schedules.executeNext())) wait = 0;
        wait = this.config.SCHEDULED_CHANGES_POLL_MS;
        if (failures > 0) this.logger.log('scheduled changes run again');
        failures = 0;
      } catch (err) {
        failures++;
        wait = Math.min(60_000, this.config.SCHEDULED_CHANGES_POLL_MS * 2 ** Math.min(failures, 8));
        if (failures === 1) this.logger.error(`scheduled changes failed, retrying with backoff: ${err instanceof Error ? err.message : String(err)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}
