import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { TransactionRunner } from '@flagship/persistence';
import { UsageRollupsRepository } from '@flagship/ledger';
import type { BillingWorkerConfig } from '../env.schema';
import type { Job } from './job';

/**
 * Compacts the usage rollups' deltas (appended by every settlement) into their hourly and daily rows
 * (docs/decisions/2026-11-29-usage-rollups.md): one transaction per batch, so a delta is merged
 * exactly once whatever crashes when; replicas take turns on an advisory lock. Reads are exact
 * without it (they sum the deltas too); it keeps them few.
 */
@Injectable()
export class UsageRollupsJob implements Job {
  readonly name = 'usage-rollups';
  readonly intervalMs: number;

  constructor(
    private readonly tx: TransactionRunner,
    private readonly repo: UsageRollupsRepository,
    @Inject(APP_CONFIG) private readonly config: BillingWorkerConfig,
  ) {
    this.intervalMs = config.USAGE_ROLLUP_INTERVAL_S * 1000;
  }

  /** One batch; `true` (run again at once) while batches come back full. */
  async run(): Promise<boolean> {
    const batchSize = this.config.USAGE_ROLLUP_BATCH_SIZE;
    return (await this.tx.run((m) => this.repo.compact(m, batchSize))) >= batchSize;
  }
}
