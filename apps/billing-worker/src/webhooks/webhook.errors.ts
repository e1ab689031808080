import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const WebhookProblems = registerProblemTypes({
  'bad-signature': { status: HttpStatus.BAD_REQUEST, title: 'Webhook signature verification failed' },
  'malformed-event': { status: HttpStatus.BAD_REQUEST, title: 'Not a Stripe event' },
  'webhook-not-configured': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'Webhook signing secret not configured' },
});
