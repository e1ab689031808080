import { stripeEnv } from '@flagship/billing';
import { bool, commonEnv, ConfigError, loadConfig, makeValidator, num, portEnv, str } from '@flagship/config';

/** A whole number of seconds (or rows) above zero: 0 would spin a job or settle rows still in flight. */
const positiveInteger = makeValidator<number>((input) => {
  const n = Number(input);
  if (!/^\d+$/.test(input.trim()) || !Number.isSafeInteger(n) || n < 1) throw new Error(`Invalid positive integer input: "${input}"`);
  return n;
});

/** A whole number of months, 0 (off) to 1200. */
const months = makeValidator<number>((input) => {
  const n = Number(input);
  if (!/^\d+$/.test(input.trim()) || n > 1200) throw new Error(`Invalid number of months (0 to 1200): "${input}"`);
  return n;
});

/** The billing worker's settings (CONTRACT.md sections 1 and 8). */
export const billingWorkerEnv = {
  ...commonEnv,
  ...portEnv(3002),
  ...stripeEnv,
  BILLING_MICRO_CREDITS_PER_CENT: num({ default: 10000, desc: 'micro-credits granted per cent paid for credits ($1 = 1,000,000 = one credit)' }),
  BILLING_JOBS_ENABLED: bool({ default: true, desc: 'run the inbox, metering, catch-up and portal jobs (off: webhooks are only stored)' }),
  WEBHOOK_INBOX_POLL_MS: num({ default: 1000, desc: 'how often the webhook inbox is polled besides being woken by each delivery' }),
  METER_EVENT_NAME: str({ default: 'flagship_ai_usage', desc: 'event_name of the Stripe meter billable gateway usage is reported to' }),
  METER_PRICE_UNIT_AMOUNT_DECIMAL: str({
    default: '0',
    desc:
      'cents per unit of metered value (a ledger debit in micro-credits) on the metered price. 0 (default): usage is prepaid, the gateway debits credits bought through checkout, and invoices list it at no charge so it is never paid twice; 0.0001 = $1 per 1,000,000 (the price of one credit) bills usage in arrears on top',
  }),
  METER_PRICE_CURRENCY: str({ default: 'usd', desc: 'currency of the metered usage price' }),
  USAGE_PRICING_INTERVAL_S: num({ default: 86400, desc: 'how often the billing meter and its metered price are checked to exist' }),
  METER_BATCH_SIZE: num({ default: 100 }),
  METER_CONCURRENCY: num({ default: 8, desc: 'meter events in flight at once within a batch' }),
  METER_POLL_MS: num({ default: 2000 }),
  STRIPE_CATCH_UP_INTERVAL_S: num({ default: 600, desc: 'how often recent Stripe events are listed to catch up on missed webhooks' }),
  STRIPE_CATCH_UP_WINDOW_S: num({ default: 3 * 86400, desc: 'how far back the first catch-up looks' }),
  PORTAL_CONFIGURATION_INTERVAL_S: num({ default: 86400, desc: 'how often the portal configuration is checked to allow every plan price' }),
  STRIPE_BACKOFF_MAX_MS: num({ default: 60000, desc: 'longest wait between retries while Stripe is down' }),
  RECONCILE_PENDING_AFTER_S: positiveInteger({
    default: 600,
    desc: 'a pending usage row older than this is abandoned and its reservation released; keep it above the gateway\'s longest request',
  }),
  RECONCILE_INTERVAL_S: positiveInteger({ default: 60, desc: 'seconds between passes of the usage reconciler' }),
  RECONCILE_BATCH_SIZE: positiveInteger({ default: 500, desc: 'pending rows settled per transaction' }),
  USAGE_ROLLUP_INTERVAL_S: positiveInteger({ default: 10, desc: 'seconds between compactions of the usage rollups\' deltas into hourly and daily rows (reads stay exact without it, only slower)' }),
  USAGE_ROLLUP_BATCH_SIZE: positiveInteger({ default: 5000, desc: 'usage rollup deltas merged per transaction' }),
  WEBHOOK_SECRETS_KEY: str({ default: '', devDefault: 'ZGV2ZWxvcG1lbnQtb25seS13ZWJob29rLWtleS0zMmI=', desc: "secret: 32 bytes in base64 that sealed the webhooks' signing secrets (management-api's WEBHOOK_SECRETS_KEY); none = webhooks are not delivered" }),
  WEBHOOKS_ALLOW_PRIVATE_URLS: bool({ default: false, desc: 'development and tests only (refused when NODE_ENV=production): webhooks may call http URLs and loopback or private addresses' }),
  WEBHOOK_POLL_MS: positiveInteger({ default: 1000, desc: 'how often the webhook outbox is polled for due deliveries' }),
  WEBHOOK_BATCH_SIZE: positiveInteger({ default: 32, desc: 'deliveries claimed and sent at once per pass' }),
  WEBHOOK_TIMEOUT_MS: positiveInteger({ default: 10000, desc: 'the longest one delivery attempt may take' }),
  WEBHOOK_RETRY_BASE_MS: positiveInteger({ default: 5000, desc: 'wait after a first failed delivery; doubled after each further one' }),
  WEBHOOK_RETRY_MAX_MS: positiveInteger({ default: 3600000, desc: 'the longest wait between two attempts of a delivery' }),
  WEBHOOK_RETRY_WINDOW_S: positiveInteger({ default: 86400, desc: 'a delivery is tried for this long; a webhook failing for this long is disabled' }),
  WEBHOOK_LOG_RETENTION_DAYS: positiveInteger({ default: 30, desc: 'delivered and failed webhook deliveries are kept in the delivery log this long' }),
  USAGE_RETENTION_MONTHS: months({
    default: 0,
    desc: "months of usage rows kept besides the running month, at most (each plan keeps its own, capped by this: libs/domain USAGE_RETENTION_MONTHS); whole monthly partitions are dropped, never one holding a row still pending or not yet reported to Stripe's meter. 0 (default): kept forever",
  }),
  USAGE_PARTITIONS_AHEAD_MONTHS: positiveInteger({ default: 3, desc: 'monthly partitions of the usage ledger kept created ahead of the running month' }),
  USAGE_PARTITIONS_INTERVAL_S: positiveInteger({ default: 3600, desc: 'seconds between passes of usage-ledger partition maintenance (partitions ahead, retention)' }),
  USAGE_RETENTION_BATCH_SIZE: positiveInteger({ default: 5000, desc: "rows of a plan keeping fewer months than the partitions deleted per transaction" }),
  BACKLOG_METRICS_INTERVAL_S: positiveInteger({ default: 15, desc: 'seconds between refreshes of the backlog gauges (pending ledger rows, meter outbox, webhook inbox)' }),
};

export type BillingWorkerConfig = ReturnType<typeof loadBillingWorkerConfig>;

export function loadBillingWorkerConfig(env: NodeJS.ProcessEnv) {
  const raw = loadConfig(env, billingWorkerEnv);
  if (raw.WEBHOOKS_ALLOW_PRIVATE_URLS && raw.NODE_ENV === 'production') {
    throw new ConfigError('invalid configuration: WEBHOOKS_ALLOW_PRIVATE_URLS=true is refused when NODE_ENV=production');
  }
  if (raw.WEBHOOK_SECRETS_KEY !== '' && Buffer.from(raw.WEBHOOK_SECRETS_KEY, 'base64').length !== 32) throw new ConfigError('invalid configuration: WEBHOOK_SECRETS_KEY must be 32 bytes in base64');
  return raw;
}
