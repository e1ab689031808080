import { HttpStatus } from '@nestjs/common';
import { ProblemException, registerProblemTypes } from '@flagship/problem-details';
import { isStripeUnavailable } from '@flagship/billing';
import Stripe from 'stripe';

export const StripeBillingProblems = registerProblemTypes({
  'payment-provider-unavailable': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'Payment provider unavailable' },
  'payment-provider-error': { status: HttpStatus.BAD_GATEWAY, title: 'Payment provider refused the request' },
  'plan-not-configured': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'Plan price not configured' },
  'already-on-plan': { status: HttpStatus.CONFLICT, title: 'Already subscribed to this plan' },
});

/** Seconds a client should wait before retrying while Stripe is down. */
export const STRIPE_RETRY_AFTER_S = 5;

/**
 * Turns a failed Stripe call into the problem the caller sees: Stripe down, rate limited or our key
 * refused -> 503 with Retry-After; anything Stripe refused -> 502 (its message is logged, not sent).
 */
export function stripeProblem(err: unknown, log: (message: string) => void): unknown {
  if (err instanceof ProblemException) return err;
  if (isStripeUnavailable(err)) {
    log(`stripe unavailable: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    return new ProblemException(StripeBillingProblems['payment-provider-unavailable'], 'Stripe cannot be reached right now; try again shortly.', {}, { 'Retry-After': String(STRIPE_RETRY_AFTER_S) });
  }
  if (err instanceof Stripe.errors.StripeError) {
    log(`stripe refused: ${err.type} ${err.code ?? ''} ${err.message}`);
    return new ProblemException(StripeBillingProblems['payment-provider-error'], 'Stripe refused the billing request.');
  }
  return err;
}
