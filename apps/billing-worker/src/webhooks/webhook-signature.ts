import { Inject, Injectable } from '@nestjs/common';
import Stripe from 'stripe';
import type { SecretReader } from '@flagship/billing';
import { ProblemException } from '@flagship/problem-details';
import { BILLING_SECRETS } from '../stripe/stripe.tokens';
import { WebhookProblems } from './webhook.errors';

/** Stripe's default: a signature older than five minutes is refused (replay protection). */
const TOLERANCE_S = 300;

/**
 * Verifies `Stripe-Signature` over the raw body with stripe-node's own verifier (HMAC-SHA256,
 * constant-time compare, timestamp tolerance), against the current signing secret and, while a
 * rotation overlaps, the previous one. Both are read from the SecretStore at each call.
 */
@Injectable()
export class WebhookSignatureVerifier {
  private readonly verifier = new Stripe('sk_unused_for_verification');

  constructor(@Inject(BILLING_SECRETS) private readonly secrets: SecretReader) {}

  verify(raw: Buffer, header: string | undefined): Stripe.Event {
    const secrets = [this.secrets.get('STRIPE_WEBHOOK_SECRET'), this.secrets.get('STRIPE_WEBHOOK_SECRET_PREVIOUS')].filter((s): s is string => Boolean(s));
    if (secrets.length === 0) throw new ProblemException(WebhookProblems['webhook-not-configured'], 'No webhook signing secret is configured.', {}, { 'Retry-After': '60' });
    if (!header) throw new ProblemException(WebhookProblems['bad-signature'], 'The Stripe-Signature header is missing.');
    for (const secret of secrets) {
      let event: Stripe.Event;
      try {
        event = this.verifier.webhooks.constructEvent(raw, header, secret, TOLERANCE_S);
      } catch (err) {
        if (err instanceof Stripe.errors.StripeSignatureVerificationError) continue;
        // Signed, but not JSON: not something Stripe sends.
        throw new ProblemException(WebhookProblems['malformed-event'], 'The signed body is not a JSON event.');
      }
      if (!isEvent(event)) throw new ProblemException(WebhookProblems['malformed-event'], 'The signed body is not a Stripe event (id, type, created, data.object).');
      return event;
    }
    throw new ProblemException(WebhookProblems['bad-signature'], 'The Stripe-Signature header does not match the body.');
  }
}

function isEvent(e: unknown): e is Stripe.Event {
  const v = e as { id?: unknown; type?: unknown; created?: unknown; data?: { object?: unknown } } | null;
  return (
    typeof v === 'object' && v !== null &&
    typeof v.id === 'string' && /^evt_[A-Za-z0-9]{1,250}$/.test(v.id) &&
    typeof v.type === 'string' && v.type.length <= 200 &&
    Number.isSafeInteger(v.created) &&
    typeof v.data?.object === 'object' && v.data.object !== null
  );
}
