import type { BillingWorkerConfig } from '../env.schema';
import type { StripeEventProcessor } from '../webhooks/stripe-event.processor';
import type { Job } from './job';

/** Drains the webhook inbox; woken by each delivery, polled besides (retries, catch-up). */
export function webhookInboxJob(processor: StripeEventProcessor, config: BillingWorkerConfig): Job {
  return { name: 'webhook-inbox', intervalMs: config.WEBHOOK_INBOX_POLL_MS, run: () => processor.processNext() };
}
