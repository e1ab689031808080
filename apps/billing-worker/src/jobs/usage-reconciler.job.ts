import { Inject, Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { APP_CONFIG } from '@flagship/config';
import { TransactionRunner } from '@flagship/persistence';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { HttpMetrics } from '@flagship/service-kit';
import type { BillingWorkerConfig } from '../env.schema';
import type { Job } from './job';
import { lowBalanceEvent, type SettledBatch, UsageReconcilerRepository } from '@flagship/ledger';

/** A pass settles at most this many batches, so a huge backlog cannot hold one pass (and shutdown) for long. */
const MAX_BATCHES_PER_PASS = 100;

/**
 * Settles usage rows a gateway left `pending` (it crashed or lost Postgres between reserving and
 * completing): after RECONCILE_PENDING_AFTER_S they are `abandoned` and their reservation goes back
 * to the tenant, so no credit stays locked; a row the gateway stamped "upstream called" is charged its
 * reserved estimate, one it never sent is charged nothing (UsageReconcilerRepository). Safe with any
 * number of billing-worker replicas. A charge that takes a tenant's balance across its low-balance
 * threshold is recorded in the batch's transaction and announced on the change feed once it has
 * committed, as the gateway announces a settlement's (CHANNELS.lowBalance).
 */
@Injectable()
export class UsageReconcilerJob implements Job {
  readonly name = 'usage-reconciler';
  readonly intervalMs: number;
  private readonly logger = new Logger('UsageReconciler');
  private readonly settledRows: Counter;
  private readonly releasedCredits: Counter;
  private readonly chargedCredits: Counter;

  constructor(
    private readonly tx: TransactionRunner,
    private readonly repo: UsageReconcilerRepository,
    @Inject(APP_CONFIG) private readonly config: BillingWorkerConfig,
    metrics: HttpMetrics,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {
    this.intervalMs = config.RECONCILE_INTERVAL_S * 1000;
    this.settledRows = new Counter({ name: 'usage_reconciler_settled_rows_total', help: 'Pending usage rows marked abandoned', registers: [metrics.registry] });
    this.releasedCredits = new Counter({
      name: 'usage_reconciler_released_credits_total',
      help: 'Micro-credits of reservation released from abandoned rows',
      registers: [metrics.registry],
    });
    this.chargedCredits = new Counter({
      name: 'usage_reconciler_charged_credits_total',
      help: 'Micro-credits debited from abandoned rows whose upstream was called (charged their reserved estimate)',
      registers: [metrics.registry],
    });
  }

  /** Batches until one comes back short (nothing stale is left) or the app stops. */
  async run(signal: AbortSignal): Promise<void> {
    const { RECONCILE_PENDING_AFTER_S: olderThanS, RECONCILE_BATCH_SIZE: batchSize } = this.config;
    for (let i = 0; i < MAX_BATCHES_PER_PASS && !signal.aborted; i++) {
      // One transaction per batch: rows and reservations change together or not at all.
      const batch = await this.tx.run((m) => this.repo.abandonStale(m, olderThanS, batchSize));
      this.record(batch, olderThanS);
      await this.announce(batch);
      if (batch.settled < batchSize) return;
    }
  }

  /** After the batch's commit. Redis down: logged, not retried (the crossing is recorded in Postgres, where the console reads it). */
  private async announce(batch: SettledBatch): Promise<void> {
    for (const c of batch.crossings) {
      await this.pubsub
        .publish(CHANNELS.lowBalance, lowBalanceEvent(c))
        .catch((err: unknown) => this.logger.warn({ err, tenantId: c.tenantId, crossingId: c.id }, 'cannot publish a low-balance crossing (it is recorded in Postgres)'));
    }
  }

  private record(batch: SettledBatch, olderThanS: number): void {
    if (batch.settled === 0) return;
    this.settledRows.inc(batch.settled);
    this.releasedCredits.inc(batch.released);
    this.chargedCredits.inc(batch.debited);
    this.logger.log(
      `abandoned ${batch.settled} usage rows pending for over ${olderThanS} s (${batch.charged} of them sent upstream, charged their estimate: ${batch.debited} micro-credits), released ${batch.released} reserved micro-credits of ${batch.tenants} tenants`,
    );
  }
}
