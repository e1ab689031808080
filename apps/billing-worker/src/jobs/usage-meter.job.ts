import type { BillingWorkerConfig } from '../env.schema';
import type { UsageMeterService } from '../metering/usage-meter.service';
import type { Job } from './job';

/** Reports billable usage to Stripe meter events, batch after batch while there is a backlog. */
export function usageMeterJob(meter: UsageMeterService, config: BillingWorkerConfig): Job {
  return { name: 'usage-meter', intervalMs: config.METER_POLL_MS, run: async () => (await meter.reportBatch()) > 0 };
}
