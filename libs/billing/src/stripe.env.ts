import { num, str } from '@flagship/config';

/**
 * Stripe settings shared by management-api and billing-worker. The values marked secret (API key,
 * webhook secrets, price ids) are read through the app's SecretStore at each use, so a rotation in
 * AWS Secrets Manager is picked up without a restart; the environment is the fallback.
 */
export const stripeEnv = {
  STRIPE_SECRET_KEY: str({ default: '', desc: 'secret: the Stripe API key; none = billing answers 503' }),
  STRIPE_WEBHOOK_SECRET: str({ default: '', desc: 'secret: the webhook endpoint signing secret (whsec_...)' }),
  STRIPE_WEBHOOK_SECRET_PREVIOUS: str({ default: '', desc: 'secret: the previous signing secret, accepted while a rotation overlaps' }),
  STRIPE_PRICE_FREE: str({ default: '', desc: 'Stripe price id of the free plan' }),
  STRIPE_PRICE_STANDARD: str({ default: '', desc: 'Stripe price id of the standard plan' }),
  STRIPE_PRICE_PREMIUM: str({ default: '', desc: 'Stripe price id of the premium plan' }),
  STRIPE_API_BASE: str({ default: '', desc: 'Stripe API address; empty = api.stripe.com (a local fake: http://127.0.0.1:12111)' }),
  STRIPE_TIMEOUT_MS: num({ default: 10000 }),
  STRIPE_MAX_NETWORK_RETRIES: num({ default: 1 }),
};

/** The names read through the SecretStore (Secrets Manager first, then the environment). */
export const STRIPE_SECRET_NAMES = [
  'STRIPE_SECRET_KEY',
  'STRIPE_WEBHOOK_SECRET',
  'STRIPE_WEBHOOK_SECRET_PREVIOUS',
  'STRIPE_PRICE_FREE',
  'STRIPE_PRICE_STANDARD',
  'STRIPE_PRICE_PREMIUM',
] as const;

/** Picks the Stripe secrets out of a validated config, for `SecretStore.fromEnv`. */
export function stripeSecretsFromConfig(config: Partial<Record<(typeof STRIPE_SECRET_NAMES)[number], string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of STRIPE_SECRET_NAMES) {
    const v = config[name];
    if (v) out[name] = v;
  }
  return out;
}
