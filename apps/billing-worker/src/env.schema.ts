import { stripeEnv } from '@flagship/billing';
import { bool, commonEnv, loadConfig, num, portEnv, str } from '@flagship/config';

/** The billing worker's settings (CONTRACT.md sections 1 and 8). */
export const billingWorkerEnv = {
  ...commonEnv,
  ...portEnv(3002),
  ...stripeEnv,
  BILLING_MICRO_CREDITS_PER_CENT: num({ default: 10000, desc: 'micro-credits granted per cent paid for credits ($1 = 1,000,000 = one credit)' }),
  BILLING_JOBS_ENABLED: bool({ default: true, desc: 'run the inbox, metering, catch-up and portal jobs (off: webhooks are only stored)' }),
  WEBHOOK_INBOX_POLL_MS: num({ default: 1000, desc: 'how often the webhook inbox is polled besides being woken by each delivery' }),
  METER_EVENT_NAME: str({ default: 'flagship_ai_usage', desc: 'event_name of the Stripe meter billable gateway usage is reported to' }),
  METER_BATCH_SIZE: num({ default: 100 }),
  METER_CONCURRENCY: num({ default: 8, desc: 'meter events in flight at once within a batch' }),
  METER_POLL_MS: num({ default: 2000 }),
  STRIPE_CATCH_UP_INTERVAL_S: num({ default: 600, desc: 'how often recent Stripe events are listed to catch up on missed webhooks' }),
  STRIPE_CATCH_UP_WINDOW_S: num({ default: 3 * 86400, desc: 'how far back the first catch-up looks' }),
  PORTAL_CONFIGURATION_INTERVAL_S: num({ default: 86400, desc: 'how often the portal configuration is checked to allow every plan price' }),
  STRIPE_BACKOFF_MAX_MS: num({ default: 60000, desc: 'longest wait between retries while Stripe is down' }),
};

export type BillingWorkerConfig = ReturnType<typeof loadBillingWorkerConfig>;

export const loadBillingWorkerConfig = (env: NodeJS.ProcessEnv) => loadConfig(env, billingWorkerEnv);
