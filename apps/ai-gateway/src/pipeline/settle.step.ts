import { Logger } from '@nestjs/common';
import { TurnBatcher } from '@flagship/lean-http';
import type { Settlement, UsageLedgerRepository } from '../ledger/usage-ledger.repository';

/**
 * The last step, after the provider: the row completed (`succeeded` or `failed`, tokens, debit,
 * provider used, latency, whether the usage was estimated), the reservation released and the real
 * cost debited, batched per event-loop turn like the reservation. A settlement that cannot be written
 * (Postgres down) is retried a few times, then left `pending` for billing-worker's reconciler, which
 * releases the reservation; the client's answer never waits for it.
 */
export class SettleStep {
  private readonly logger = new Logger('SettleStep');
  private readonly batcher: TurnBatcher<Settlement, boolean>;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    repository: UsageLedgerRepository,
    private readonly retries = 3,
    private readonly retryDelayMs = 500,
  ) {
    this.batcher = new TurnBatcher((batch) => repository.settle(batch), 500);
  }

  /** Resolves once written (or given up on); never rejects. */
  settle(settlement: Settlement): Promise<void> {
    const done = this.write(settlement, 0).finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
    return done;
  }

  /** For shutdown and tests: every settlement handed in so far has been written or given up on. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private async write(settlement: Settlement, attempt: number): Promise<void> {
    try {
      const completed = await this.batcher.add(settlement);
      if (!completed) this.logger.warn({ id: settlement.id }, 'ledger row was no longer pending (settled by the reconciler)');
    } catch (err) {
      if (attempt >= this.retries) {
        this.logger.error({ err, id: settlement.id }, 'cannot settle the ledger row; the reconciler will release its reservation');
        return;
      }
      await new Promise((r) => setTimeout(r, this.retryDelayMs * (attempt + 1)));
      await this.write(settlement, attempt + 1);
    }
  }
}
