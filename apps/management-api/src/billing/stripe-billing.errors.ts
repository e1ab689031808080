import { applyDecorators, HttpStatus } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
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

/** The error answers every billing route documents. */
export function BillingErrorResponses(...extra: Array<{ status: number; description: string }>): MethodDecorator {
  const problem = { $ref: '#/components/schemas/Problem' };
  return applyDecorators(
    ...[
      { status: 401, description: 'no or bad bearer token' },
      { status: 403, description: 'not an admin of the tenant (billing is for tenant admins), or a client token' },
      ...extra,
      { status: 503, description: 'Stripe unavailable or billing not configured; Retry-After says when to try again' },
    ].map((r) => ApiResponse({ status: r.status, description: r.description, content: { 'application/problem+json': { schema: problem } } })),
  );
}
