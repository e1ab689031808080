import { Module } from '@nestjs/common';
import { UsageReconcilerJob } from './usage-reconciler.job';
import { UsagePartitionsRepository, UsageReconcilerRepository, UsageRollupsRepository } from '@flagship/ledger';
import { UsagePartitionsJob } from './usage-partitions.job';
import { UsageRollupsJob } from './usage-rollups.job';

/** The usage reconciler's, the ledger partitions' and the usage rollups' parts; AppModule lists it with the Stripe jobs for the one JobScheduler (its repository also supplies the backlog gauges). */
@Module({
  providers: [UsageReconcilerRepository, UsageReconcilerJob, UsagePartitionsRepository, UsagePartitionsJob, UsageRollupsRepository, UsageRollupsJob],
  exports: [UsageReconcilerJob, UsageReconcilerRepository, UsagePartitionsJob, UsageRollupsJob],
})
export class JobsModule {}
