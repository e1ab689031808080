import { Logger } from '@nestjs/common';
import { Coalescer, TurnBatcher } from '@flagship/batching';
import type { LowBalanceCrossing, UsageLedger } from '@flagship/ledger';
import type { GatewayMetrics } from '../gateway.metrics';
import { costOf } from '../models/model-catalogue';
import { type Admitted, type CallOutcome, chargedCall } from './call-outcome';
import type { Reservation, Settlement } from './ledger.types';

type Release = Pick<Reservation, 'id' | 'tenantId'>;

export interface SettleStepOptions {
  /** Crossings a settlement batch recorded, once committed (the gateway publishes them); must not throw. */
  onCrossings: (crossings: LowBalanceCrossing[]) => void;
  /** Where each settled request is counted (requests, tokens, debits, overruns by product, provider and model). */
  metrics?: Pick<GatewayMetrics, 'completed' | 'overrun'>;
  /** How long settlements gather before they are written together (GATEWAY_SETTLE_GATHER_MS; 0: the same event-loop turn's only). */
  gatherMs?: number;
  /** Tries after the first, waits growing by retryDelayMs up to maxRetryDelayMs (about 77 s with the defaults). */
  retries?: number;
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
}

/**
 * The last step, after the provider: the row completed (`succeeded` or `failed`, tokens, debit,
 * provider used, latency, whether the usage was estimated), the reservation released and the real
 * cost debited, batched per event-loop turn like the reservation. A settlement that cannot be written
 * (Postgres down) is retried for as long as a Postgres restart takes (`retries` times, waits growing by
 * `retryDelayMs` up to `maxRetryDelayMs`: about 77 s by default), then left `pending` for
 * billing-worker's reconciler, which charges it the reserved estimate (the row was stamped "upstream
 * called" before its answer went out) and says so; the client's answer never waits for it; the retries
 * outlast a Postgres crash recovery, so answered requests are not left unbilled (ledger-crash.e2e-spec).
 * Only the requests under way when Postgres went away wait here: while it is down, new ones fail at
 * their reservation (503). Settlements gather for `gatherMs` (GATEWAY_SETTLE_GATHER_MS) before they
 * are written, so a tenant's balance row lock is taken once per window rather than once per request,
 * when the next request's reservation wants it (figures: docs/decisions/2026-11-29-gateway-hot-path.md).
 * The row stays `pending` and the estimate held that much longer; a crash meanwhile leaves it to the
 * reconciler.
 * A settlement batch that takes a tenant's balance across its low-balance threshold records the
 * crossing in the same statement; `onCrossings` hears of it once that statement has committed.
 * Also the way back for a reservation whose request was refused after all (a 429 from the rate limit
 * checked at the same time): its pending row is deleted and its estimate released, the same way.
 * complete() is the one way a request that reached its provider step is charged.
 */
export class SettleStep {
  private readonly logger = new Logger('SettleStep');
  private readonly settlements: TurnBatcher<Settlement, boolean>;
  private readonly releases: TurnBatcher<Release, boolean>;
  private readonly inFlight = new Set<Promise<unknown>>();

  /** Settlements gathering for gatherMs, handed to the batcher together (undefined: gatherMs 0, none gather). */
  private readonly window: Coalescer<Settlement, Settlement[]> | undefined;
  private readonly metrics: SettleStepOptions['metrics'];
  private readonly gatherMs: number;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;

  constructor(repository: UsageLedger, options: SettleStepOptions) {
    const { onCrossings } = options;
    this.metrics = options.metrics;
    this.gatherMs = options.gatherMs ?? 0;
    this.retries = options.retries ?? 20;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 5000;
    this.settlements = new TurnBatcher(async (batch) => {
      const { completed, crossings } = await repository.settleBatch(batch);
      // Committed asynchronously (the balance row lock is not held through a flush); in the durable
      // mode it counts as written once a flush barrier is past it. A barrier that fails (Postgres
      // crashed: the commit may be lost) fails the batch, which is retried like any failed write; a
      // retry that finds its row no longer pending means the first write was kept after all.
      await repository.flushBarrier();
      if (crossings.length > 0) onCrossings(crossings);
      return completed;
    }, 500);
    this.releases = new TurnBatcher((batch) => repository.release(batch), 500);
    if (this.gatherMs > 0) {
      this.window = new Coalescer<Settlement, Settlement[]>({
        windowMs: this.gatherMs,
        fold: (gathered, s) => (gathered === undefined ? [s] : (gathered.push(s), gathered)),
        // Handed over in one turn, so the batcher writes them in one statement; each write is tracked (drain).
        emit: (gathered) => {
          for (const s of gathered) void this.track(this.write(this.settlements, s, 'settle', 0));
        },
      });
    }
  }

  /**
   * The settlement of a request that reached its provider step, whatever became of it: charged as
   * chargedCall says (lostUsage for a usage never reported), at the prices its reservation recorded
   * (zero-rated: 0), counted in the metrics (a debit above the reservation as an overrun, which the
   * ledger marks on the row too), and written (gathered, batched, retried: see above). Answers the settlement handed in.
   */
  complete(reservation: Reservation, admitted: Admitted, outcome: CallOutcome, latencyMs: number): Settlement {
    const call = chargedCall(outcome, admitted);
    const { inputTokens, outputTokens } = call.usage;
    const cachedTokens = call.usage.cachedTokens ?? 0;
    const debit = reservation.zeroRatedReason === null ? costOf(reservation, inputTokens, outputTokens, cachedTokens) : 0;
    if (this.metrics !== undefined) {
      const labels = { product: reservation.productKey, provider: outcome.provider, model: reservation.model };
      if (debit > reservation.estimate) this.metrics.overrun(labels, reservation.estimate, debit);
      this.metrics.completed(labels, reservation.endpoint, call.label, call.usage, debit, call.upstreamMs);
    }
    const settlement: Settlement = {
      id: reservation.id,
      tenantId: reservation.tenantId,
      status: call.status,
      inputTokens,
      outputTokens,
      cachedTokens,
      debit,
      provider: outcome.provider,
      latencyMs: Math.round(latencyMs),
      usageEstimated: call.usage.estimated,
      errorCode: call.errorCode,
      ...(outcome.kind === 'streamed' && outcome.firstTokenMs !== undefined ? { firstTokenMs: Math.round(outcome.firstTokenMs) } : {}),
    };
    void this.enqueue(settlement);
    return settlement;
  }

  /** Resolves once written (or given up on), or handed to the writer after its window; never rejects. */
  private enqueue(settlement: Settlement): Promise<void> {
    if (this.window === undefined) return this.track(this.write(this.settlements, settlement, 'settle', 0));
    return this.track(this.window.add(settlement));
  }

  /**
   * Takes back a reservation (once it is made: a refused or failed one needs nothing) whose request
   * was refused before the provider; never rejects, and drain() waits for it from now on.
   */
  release(reservation: Promise<Release>): Promise<void> {
    return this.track(
      reservation.then(
        (r) => this.write(this.releases, { id: r.id, tenantId: r.tenantId }, 'release', 0),
        () => undefined,
      ),
    );
  }

  /** For shutdown and tests: every settlement handed in so far has been written or given up on. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private track(work: Promise<void>): Promise<void> {
    const done = work.finally(() => this.inFlight.delete(done));
    this.inFlight.add(done);
    return done;
  }

  private async write<T extends { id: string }>(batcher: TurnBatcher<T, boolean>, item: T, what: 'settle' | 'release', attempt: number): Promise<void> {
    try {
      const completed = await batcher.add(item);
      if (completed) return;
      if (what === 'settle' && attempt === 0) {
        // Not a retry of a write whose answer was lost: the row was abandoned by the reconciler, or
        // was never durable (its reservation lost in a Postgres crash with synchronous_commit off).
        // Either way this answered request's debit is recorded nowhere.
        this.logger.error({ id: item.id }, 'ledger row was no longer pending (abandoned by the reconciler, or lost in a Postgres crash): its debit is not recorded');
      } else {
        // A release, or a retry: the try whose answer was lost may have written it (with Postgres
        // back, the usual case with synchronous_commit on), or it is gone as above (usual with it off).
        const earlier = attempt > 0 ? 'written by the earlier try whose answer was lost, ' : '';
        this.logger.warn({ id: item.id }, `ledger row was no longer pending at this ${what} (${earlier}abandoned by the reconciler, or lost in a Postgres crash)`);
      }
    } catch (err) {
      if (attempt >= this.retries) {
        this.logger.error({ err, id: item.id }, `cannot ${what} the ledger row; the reconciler will settle it (its estimate if the upstream was called)`);
        return;
      }
      await new Promise((r) => setTimeout(r, Math.min(this.retryDelayMs * (attempt + 1), this.maxRetryDelayMs)));
      await this.write(batcher, item, what, attempt + 1);
    }
  }
}
