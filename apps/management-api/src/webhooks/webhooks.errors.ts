import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const WebhookProblems = registerProblemTypes({
  'webhook-not-found': { status: HttpStatus.NOT_FOUND, title: 'Webhook not found' },
  'webhook-delivery-not-found': { status: HttpStatus.NOT_FOUND, title: 'Webhook delivery not found' },
  'webhook-disabled': { status: HttpStatus.CONFLICT, title: 'Webhook disabled' },
  'webhooks-unavailable': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'Webhooks unavailable' },
});
