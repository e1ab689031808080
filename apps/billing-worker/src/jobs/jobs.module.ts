import { Module } from '@nestjs/common';
import { JOBS } from './job';
import { JobScheduler } from './job-scheduler';
import { UsageReconcilerJob } from './usage-reconciler.job';
import { UsageReconcilerRepository } from './usage-reconciler.repository';

/** Background jobs of billing-worker; a new job is a provider here and one more entry in JOBS. */
@Module({
  providers: [
    UsageReconcilerRepository,
    UsageReconcilerJob,
    { provide: JOBS, useFactory: (reconciler: UsageReconcilerJob) => [reconciler], inject: [UsageReconcilerJob] },
    JobScheduler,
  ],
  exports: [UsageReconcilerJob],
})
export class JobsModule {}
