import { Inject, Injectable, Logger } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { APP_CONFIG } from '@flagship/config';
import { USAGE_RETENTION_MONTHS } from '@flagship/domain';
import { retentionPolicy, UsagePartitionsRepository } from '@flagship/ledger';
import { HttpMetrics } from '@flagship/service-kit';
import type { BillingWorkerConfig } from '../env.schema';
import type { Job } from './job';

/** A pass deletes at most this many batches of a shorter plan's rows, so one pass (and shutdown) stays short. */
const MAX_DELETE_BATCHES_PER_PASS = 20;

/**
 * usage_ledger's monthly partitions (docs/decisions/2026-11-29-partitioned-ledger.md): each pass makes
 * sure the running month and USAGE_PARTITIONS_AHEAD_MONTHS after it have a partition, then, when the
 * operator set USAGE_RETENTION_MONTHS, drops whole months past the longest plan's retention and
 * deletes, in batches, the older rows of plans keeping less. A row still pending or not yet reported
 * to Stripe's meter is never removed: its month stays (counted in usage_ledger_retention_held_partitions)
 * until the reconciler and the meter are through with it. Safe with any number of replicas (one
 * advisory lock per change, UsagePartitionsRepository); runs whether or not the Stripe jobs do, as the
 * gateway needs the months ahead.
 */
@Injectable()
export class UsagePartitionsJob implements Job {
  readonly name = 'usage-partitions';
  readonly intervalMs: number;
  private readonly logger = new Logger('UsagePartitions');
  private readonly created: Counter;
  private readonly dropped: Counter;
  private readonly deleted: Counter;
  private readonly held: Gauge;
  private readonly fallbackRows: Gauge;

  constructor(
    private readonly partitions: UsagePartitionsRepository,
    @Inject(APP_CONFIG) private readonly config: BillingWorkerConfig,
    metrics: HttpMetrics,
  ) {
    this.intervalMs = config.USAGE_PARTITIONS_INTERVAL_S * 1000;
    const registers = [metrics.registry];
    this.created = new Counter({ name: 'usage_ledger_partitions_created_total', help: 'Monthly usage-ledger partitions created ahead', registers });
    this.dropped = new Counter({ name: 'usage_ledger_partitions_dropped_total', help: 'Usage-ledger partitions dropped past retention', registers });
    this.deleted = new Counter({ name: 'usage_retention_deleted_rows_total', help: 'Usage rows deleted past their plan retention (plans keeping less than the partitions)', registers });
    this.held = new Gauge({
      name: 'usage_ledger_retention_held_partitions',
      help: "Partitions past retention kept because they hold a row still pending or not yet reported to Stripe's meter",
      registers,
    });
    this.fallbackRows = new Gauge({
      name: 'usage_ledger_default_partition_rows',
      help: 'Usage rows in the DEFAULT partition (0 while months are created ahead; moved out when their month is created)',
      registers,
    });
  }

  /** `true` (run again at once) while a shorter plan still has a full batch of expired rows. */
  async run(signal: AbortSignal): Promise<boolean> {
    const made = await this.partitions.ensureAhead(this.config.USAGE_PARTITIONS_AHEAD_MONTHS);
    if (made.length > 0) {
      this.created.inc(made.length);
      this.logger.log(`created usage-ledger partitions ${made.join(', ')}`);
    }
    this.fallbackRows.set(await this.partitions.defaultRows());
    const policy = retentionPolicy(this.config.USAGE_RETENTION_MONTHS, USAGE_RETENTION_MONTHS);
    if (policy === null) return false;
    const { dropped, held } = await this.partitions.dropBefore(await this.partitions.cutoff(policy.partitionMonths));
    this.held.set(held.length);
    if (dropped.length > 0) {
      this.dropped.inc(dropped.length);
      this.logger.log(`dropped usage-ledger partitions past ${policy.partitionMonths} months: ${dropped.join(', ')}`);
    }
    if (held.length > 0) this.logger.warn(`kept usage-ledger partitions past retention holding rows pending or not yet metered: ${held.join(', ')}`);
    let more = false;
    for (const { plan, months } of policy.shorterPlans) {
      const cutoff = await this.partitions.cutoff(months);
      for (let i = 0; i < MAX_DELETE_BATCHES_PER_PASS && !signal.aborted; i++) {
        const n = await this.partitions.deleteBefore(plan, cutoff, this.config.USAGE_RETENTION_BATCH_SIZE);
        this.deleted.inc(n);
        if (n < this.config.USAGE_RETENTION_BATCH_SIZE) break;
        if (i === MAX_DELETE_BATCHES_PER_PASS - 1) more = true;
      }
    }
    return more;
  }
}
