import type { BillingWorkerConfig } from '../env.schema';
import type { UsagePricingService } from '../metering/usage-pricing.service';
import type { Job } from './job';

/** At start-up and daily: the billing meter and the metered price on it exist. */
export function usagePricingJob(pricing: UsagePricingService, config: BillingWorkerConfig): Job {
  return { name: 'usage-pricing', intervalMs: config.USAGE_PRICING_INTERVAL_S * 1000, run: async () => (await pricing.ensure(), false) };
}
