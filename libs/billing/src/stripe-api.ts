import { createHash } from 'node:crypto';
import Stripe from 'stripe';

/** Where secrets are read: SecretStore from @flagship/config fits. */
export interface SecretReader {
  get(name: string): string | undefined;
}

export interface StripeApiOptions {
  /** `http://127.0.0.1:12111` for a local fake; empty for api.stripe.com. */
  apiBase?: string;
  timeoutMs?: number;
  maxNetworkRetries?: number;
}

/** Stripe is not configured here (no API key): callers answer 503, as for Stripe being down. */
export class StripeNotConfiguredError extends Error {
  override readonly name = 'StripeNotConfiguredError';
}

/**
 * The stripe-node client for the API key currently in the SecretStore: a rotated key is used from
 * the next call on, without a restart. One client per key (the SDK keeps a connection pool).
 */
export class StripeApi {
  private current: { key: string; client: Stripe } | undefined;

  constructor(
    private readonly secrets: SecretReader,
    private readonly options: StripeApiOptions = {},
  ) {}

  get configured(): boolean {
    return Boolean(this.secrets.get('STRIPE_SECRET_KEY'));
  }

  client(): Stripe {
    const key = this.secrets.get('STRIPE_SECRET_KEY');
    if (!key) throw new StripeNotConfiguredError('STRIPE_SECRET_KEY is not set');
    if (this.current?.key !== key) this.current = { key, client: new Stripe(key, { ...this.endpoint(), timeout: this.options.timeoutMs ?? 10000, maxNetworkRetries: this.options.maxNetworkRetries ?? 1, appInfo: { name: 'flagship' } }) };
    return this.current.client;
  }

  private endpoint(): { host?: string; port?: number; protocol?: 'http' | 'https' } {
    if (!this.options.apiBase) return {};
    const u = new URL(this.options.apiBase);
    const protocol = u.protocol === 'http:' ? 'http' : 'https';
    return { host: u.hostname, port: u.port ? Number(u.port) : protocol === 'http' ? 80 : 443, protocol };
  }
}

/**
 * True when a Stripe call failed because Stripe (or our access to it) is unavailable, so the caller
 * should answer 503 / retry later: no connection, a 5xx, rate limited, a rejected or missing key.
 */
export function isStripeUnavailable(err: unknown): boolean {
  return (
    err instanceof StripeNotConfiguredError ||
    err instanceof Stripe.errors.StripeConnectionError ||
    err instanceof Stripe.errors.StripeAPIError ||
    err instanceof Stripe.errors.StripeRateLimitError ||
    err instanceof Stripe.errors.StripeAuthenticationError ||
    (err instanceof Stripe.errors.StripeError && (err.statusCode ?? 0) >= 500)
  );
}

/** Stripe's longest idempotency key. */
const STRIPE_IDEMPOTENCY_KEY_MAX = 255;

/**
 * The request options passing a caller's Idempotency-Key on to Stripe under `scope` (Stripe's keys
 * are account-wide, so the scope names the operation and tenant). A key that would make the whole
 * longer than Stripe takes is replaced by its SHA-256: the same caller key still maps to one Stripe key.
 */
export function scopedIdempotencyKey(scope: string, callerKey: string | undefined): { idempotencyKey?: string } {
  if (!callerKey) return {};
  const key = `${scope}-${callerKey}`;
  return { idempotencyKey: key.length <= STRIPE_IDEMPOTENCY_KEY_MAX ? key : `${scope}-sha256-${createHash('sha256').update(callerKey).digest('hex')}` };
}

/** A meter event refused because its identifier was already accepted: it was delivered. */
export function isDuplicateMeterEvent(err: unknown): boolean {
  return err instanceof Stripe.errors.StripeInvalidRequestError && (err.code === 'resource_already_exists' || /already exists with identifier/i.test(err.message));
}
