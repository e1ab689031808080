import { Module } from '@nestjs/common';
import { UsageReconcilerJob } from './usage-reconciler.job';
import { UsagePartitionsRepository, UsageReconcilerRepository } from '@flagship/ledger';
import { UsagePartitionsJob } from './usage-partitions.job';

/** The usage reconciler's and the ledger partitions' parts; AppModule lists it with the Stripe jobs for the one JobScheduler (its repository also supplies the backlog gauges). */
@Module({
  providers: [UsageReconcilerRepository, UsageReconcilerJob, UsagePartitionsRepository, UsagePartitionsJob],
  exports: [UsageReconcilerJob, UsageReconcilerRepository, UsagePartitionsJob],
})
export class JobsModule {}
