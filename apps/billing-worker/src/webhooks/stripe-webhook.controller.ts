import { Controller, Headers, HttpCode, Logger, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { CommonProblems, ProblemException, requestIdOf } from '@flagship/problem-details';
import { clientAddress, clientRequestIdOf } from '@flagship/service-kit';
import { BillingMetrics } from '../billing.metrics';
import { JobScheduler } from '../jobs/job-scheduler';
import { StripeEventsRepository } from './stripe-events.repository';
import { WebhookProblems } from './webhook.errors';
import { WebhookSignatureVerifier } from './webhook-signature';

/**
 * `POST /webhooks/stripe`: verify, store in the inbox under the event id, answer 200 at once, and
 * wake the inbox job. Processing happens from the stored row, so a slow Stripe read never makes
 * Stripe's delivery time out, and a crash after the answer loses nothing.
 */
@Controller('webhooks')
export class StripeWebhookController {
  private readonly log = new Logger(StripeWebhookController.name);

  constructor(
    private readonly verifier: WebhookSignatureVerifier,
    private readonly inbox: StripeEventsRepository,
    private readonly jobs: JobScheduler,
    private readonly metrics: BillingMetrics,
  ) {}

  @Post('stripe')
  @HttpCode(200)
  async receive(@Req() req: Request, @Headers('stripe-signature') signature?: string): Promise<{ received: true; duplicate: boolean }> {
    const raw: unknown = req.body;
    if (!Buffer.isBuffer(raw)) throw new ProblemException(CommonProblems['bad-request'], 'The webhook body was not received as raw bytes.');
    let event;
    try {
      event = this.verifier.verify(raw, signature);
    } catch (err) {
      this.metrics.webhooks.inc({ outcome: err instanceof ProblemException ? err.problem.slug : 'error' });
      if (err instanceof ProblemException && err.problem.slug === 'bad-signature') {
        // Logged without the body or the header: a forged request is noted, nothing of it replayed.
        this.log.warn(
          { requestId: requestIdOf(req), clientRequestId: clientRequestIdOf(req), bytes: raw.length, remote: clientAddress(req) },
          `stripe webhook refused: ${err.detail}`,
        );
      }
      throw err;
    }
    let fresh: boolean;
    try {
      fresh = await this.inbox.store(event, 'webhook');
    } catch (err) {
      // Postgres' jsonb refuses \u0000 in strings: a signed body we cannot keep is refused, not a 500.
      if ((err as { code?: string }).code === '22P05') throw new ProblemException(WebhookProblems['malformed-event'], 'The event holds text Postgres cannot store (NUL).');
      throw err;
    }
    this.metrics.webhooks.inc({ outcome: fresh ? 'stored' : 'duplicate' });
    if (fresh) this.jobs.wake('webhook-inbox');
    return { received: true, duplicate: !fresh };
  }
}
