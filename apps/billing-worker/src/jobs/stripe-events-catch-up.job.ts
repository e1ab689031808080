import type { BillingWorkerConfig } from '../env.schema';
import type { StripeEventsCatchUpService } from '../stripe/stripe-events-catch-up.service';
import type { Job } from './job';

/** At start-up and every STRIPE_CATCH_UP_INTERVAL_S: store the events webhooks missed. */
export function stripeEventsCatchUpJob(catchUp: StripeEventsCatchUpService, config: BillingWorkerConfig): Job {
  return { name: 'stripe-events-catch-up', intervalMs: config.STRIPE_CATCH_UP_INTERVAL_S * 1000, run: async () => (await catchUp.catchUp(), false) };
}
