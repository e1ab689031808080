import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { HttpMetrics } from '@flagship/service-kit';

/** billing-worker's own counters, on the app's /metrics registry. */
@Injectable()
export class BillingMetrics {
  readonly webhooks: Counter<'outcome'>;
  readonly events: Counter<'type' | 'outcome'>;
  readonly meterEvents: Counter<'outcome'>;

  constructor(metrics: HttpMetrics) {
    const registers = [metrics.registry];
    this.webhooks = new Counter({ name: 'billing_webhooks_total', help: 'Stripe webhook deliveries, by outcome (stored, duplicate, refused)', labelNames: ['outcome'], registers });
    this.events = new Counter({ name: 'billing_stripe_events_total', help: 'Stripe events processed from the inbox, by type and outcome', labelNames: ['type', 'outcome'], registers });
    this.meterEvents = new Counter({ name: 'billing_meter_events_total', help: 'Usage rows reported to Stripe meter events (accepted, duplicate = already accepted)', labelNames: ['outcome'], registers });
  }
}
