import { Inject, Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { APP_CONFIG } from '@flagship/config';
import { type Backlog, UsageMeterRepository, UsageReconcilerRepository } from '@flagship/ledger';
import { TransactionRunner } from '@flagship/persistence';
import { HttpMetrics } from '@flagship/service-kit';
import type { BillingWorkerConfig } from '../env.schema';
import { StripeEventsRepository } from '../webhooks/stripe-events.repository';
import type { Job } from './job';

interface BacklogGauges {
  rows: Gauge;
  age: Gauge;
}

/**
 * The three queues billing-worker drains, as gauges the alerts read (k8s/runbooks): usage rows left
 * `pending` (the reconciler settles them), billable rows not yet accepted by Stripe's meter (the
 * usage meter), Stripe events stored but not processed (the webhook inbox). Each is a row count and
 * the age of the oldest row, by Postgres' clock, refreshed every BACKLOG_METRICS_INTERVAL_S by one
 * short read-only transaction, on every replica (they report the same values: alerts take the max).
 * Totals of every tenant, never a label per tenant. Runs whether or not the Stripe jobs do, so a
 * backlog that nothing drains shows.
 */
@Injectable()
export class BacklogMetricsJob implements Job {
  readonly name = 'backlog-metrics';
  readonly intervalMs: number;
  private readonly pending: BacklogGauges;
  private readonly meter: BacklogGauges;
  private readonly inbox: BacklogGauges;

  constructor(
    private readonly tx: TransactionRunner,
    private readonly reconciler: UsageReconcilerRepository,
    private readonly meterRows: UsageMeterRepository,
    private readonly events: StripeEventsRepository,
    @Inject(APP_CONFIG) config: BillingWorkerConfig,
    metrics: HttpMetrics,
  ) {
    this.intervalMs = config.BACKLOG_METRICS_INTERVAL_S * 1000;
    const registers = [metrics.registry];
    const gauges = (rows: string, age: string, what: string): BacklogGauges => ({
      rows: new Gauge({ name: rows, help: `${what}: rows`, registers }),
      age: new Gauge({ name: age, help: `${what}: age of the oldest in seconds (0: none)`, registers }),
    });
    this.pending = gauges(
      'usage_ledger_pending_rows',
      'usage_ledger_oldest_pending_age_seconds',
      'Usage ledger rows still pending (requests in flight, or left by a gateway that crashed)',
    );
    this.meter = gauges('billing_meter_unreported_rows', 'billing_meter_oldest_unreported_age_seconds', 'Billable usage rows not yet accepted by Stripe meter events');
    this.inbox = gauges(
      'billing_webhook_inbox_unprocessed_rows',
      'billing_webhook_inbox_oldest_unprocessed_age_seconds',
      'Stripe events stored in the webhook inbox and not yet processed',
    );
  }

  async run(): Promise<void> {
    const [pending, meter, inbox] = await this.tx.run(async (m) => [
      await this.reconciler.pendingBacklog(m),
      await this.meterRows.backlog(m),
      await this.events.inboxBacklog(m),
    ]);
    set(this.pending, pending);
    set(this.meter, meter);
    set(this.inbox, inbox);
  }
}

function set(g: BacklogGauges, b: Backlog): void {
  g.rows.set(b.rows);
  g.age.set(b.oldestAgeSeconds);
}
