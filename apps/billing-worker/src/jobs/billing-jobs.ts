import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { BillingWorkerConfig } from '../env.schema';
import { UsageMeterService } from '../metering/usage-meter.service';
import { PortalConfigurationService } from '../stripe/portal-configuration.service';
import { StripeEventsCatchUpService } from '../stripe/stripe-events-catch-up.service';
import { StripeEventProcessor } from '../webhooks/stripe-event.processor';
import { JobRunner } from './job-runner';
import { portalConfigurationJob } from './portal-configuration.job';
import { stripeEventsCatchUpJob } from './stripe-events-catch-up.job';
import { usageMeterJob } from './usage-meter.job';
import { webhookInboxJob } from './webhook-inbox.job';

/** billing-worker's jobs, started with the app (unless BILLING_JOBS_ENABLED=false) and drained on shutdown. */
@Injectable()
export class BillingJobs implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly runner: JobRunner;

  constructor(
    @Inject(APP_CONFIG) private readonly config: BillingWorkerConfig,
    processor: StripeEventProcessor,
    meter: UsageMeterService,
    catchUp: StripeEventsCatchUpService,
    portal: PortalConfigurationService,
  ) {
    this.runner = new JobRunner(
      [webhookInboxJob(processor, config), usageMeterJob(meter, config), stripeEventsCatchUpJob(catchUp, config), portalConfigurationJob(portal, config)],
      config.STRIPE_BACKOFF_MAX_MS,
    );
  }

  onApplicationBootstrap(): void {
    if (this.config.BILLING_JOBS_ENABLED) this.runner.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.runner.stop();
  }

  wake(name: string): void {
    this.runner.wake(name);
  }
}
