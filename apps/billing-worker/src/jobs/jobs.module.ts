import { Module } from '@nestjs/common';
import { UsageReconcilerJob } from './usage-reconciler.job';
import { UsageReconcilerRepository } from '@flagship/ledger';

/** The usage reconciler's parts; AppModule lists it with the Stripe jobs for the one JobScheduler (its repository also supplies the backlog gauges). */
@Module({
  providers: [UsageReconcilerRepository, UsageReconcilerJob],
  exports: [UsageReconcilerJob, UsageReconcilerRepository],
})
export class JobsModule {}
