import { Module } from '@nestjs/common';
import { UsageReconcilerJob } from './usage-reconciler.job';
import { UsageReconcilerRepository, UsageRollupsRepository } from '@flagship/ledger';
import { UsageRollupsJob } from './usage-rollups.job';

/** The usage reconciler's and the usage rollups' parts; AppModule lists it with the Stripe jobs for the one JobScheduler (its repository also supplies the backlog gauges). */
@Module({
  providers: [UsageReconcilerRepository, UsageReconcilerJob, UsageRollupsRepository, UsageRollupsJob],
  exports: [UsageReconcilerJob, UsageReconcilerRepository, UsageRollupsJob],
})
export class JobsModule {}
