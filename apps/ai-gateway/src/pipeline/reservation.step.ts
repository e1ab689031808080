import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { TurnBatcher } from '@flagship/batching';
import { dependencyDown, GatewayError } from '../gateway.errors';
import type { CappedOutcome, ReserveOutcome, UsageLedger } from '@flagship/ledger';
import type { Reservation } from './ledger.types';

/**
 * Step 7: the credit reservation and the `pending` ledger row, before the provider is called, in one
 * Postgres round trip shared by every request of the same event-loop turn (UsageLedgerRepository's
 * RESERVE). Zero-rated requests reserve nothing and debit 0 but are recorded all the same. A billable
 * request whose estimate the tenant's credit left (balance - reserved) does not cover is refused with
 * 402 `insufficient_credits`, naming the console's billing page, so the provider is never called for it;
 * one whose estimate this month's budget of its OAuth client or of its product key does not cover (the
 * same statement decides) is refused with 402 `budget_exceeded`, naming the budget and the same page,
 * where a tenant admin changes it.
 */
export class ReservationStep {
  private readonly logger = new Logger('ReservationStep');
  private readonly batcher: TurnBatcher<Reservation, ReserveOutcome>;
  private readonly marks: TurnBatcher<Reservation, undefined>;
  private markFailing = false;

  constructor(
    private readonly repository: UsageLedger,
    /** The console's billing page, named in the 402 so the caller knows where to buy credits. */
    private readonly billingUrl: string,
  ) {
    this.batcher = new TurnBatcher((batch) => repository.admit(batch), 500);
    this.marks = new TurnBatcher(async (batch) => {
      await repository.markUpstreamCalled(batch);
      return batch.map(() => undefined);
    }, 500);
  }

  /**
   * Step 8's marker: the request is being sent to its provider. Its row is stamped "upstream called"
   * (one statement per event-loop turn), so that if this process dies before its settlement is
   * written, the reconciler charges the reserved estimate rather than nothing. The caller sends the
   * request at once and waits for this only before it answers, so the stamp costs the answer nothing
   * unless the provider answers faster than Postgres commits. Never rejects: with Postgres down the
   * answer still goes out (its settlement is retried until Postgres is back); the row then says
   * "not called" only if this process also dies before the settlement lands.
   */
  upstreamCalled(reservation: Reservation): Promise<void> {
    // A zero-rated row debits nothing either way, but is stamped all the same: in the durable mode the
    // stamp's flush is what puts the request's row on disk before its answer. A stamp that fails
    // rejects: the answer is then withheld (ProviderCallStep), since its row may not be on disk.
    return this.marks.add(reservation).then(
      () => {
        if (this.markFailing) this.logger.log('"upstream called" stamps are written again');
        this.markFailing = false;
      },
      (err: unknown) => {
        if (!this.markFailing) this.logger.warn({ err }, 'cannot stamp "upstream called" on ledger rows; answers are withheld (503) until it can');
        this.markFailing = true;
        throw err;
      },
    );
  }

  async reserve(request: Omit<Reservation, 'id'>): Promise<Reservation> {
    const reservation = { ...request, id: randomUUID() };
    let outcome: ReserveOutcome;
    try {
      outcome = await this.batcher.add(reservation);
    } catch (err) {
      this.logger.warn({ err }, 'cannot reserve credit');
      throw dependencyDown('Postgres');
    }
    const refusal = admissionRefusal(outcome, reservation, this.billingUrl);
    if (refusal !== undefined) throw refusal;
    return reservation;
  }

  /**
   * A bound route's variation with a monthly spend cap: reserved under it (UsageLedger.admitUnderCap,
   * one transaction, not batched: capped variations queue per variation across replicas); undefined
   * when the cap leaves no room (nothing was held: the caller reserves its control instead).
   */
  async reserveUnderCap(request: Omit<Reservation, 'id'>, monthlyCap: number): Promise<Reservation | undefined> {
    const reservation = { ...request, id: randomUUID() };
    let outcome: CappedOutcome;
    try {
      outcome = await this.repository.admitUnderCap(reservation, monthlyCap);
    } catch (err) {
      this.logger.warn({ err }, 'cannot reserve credit');
      throw dependencyDown('Postgres');
    }
    if (outcome === 'spend_cap') return undefined;
    const refusal = admissionRefusal(outcome, reservation, this.billingUrl);
    if (refusal !== undefined) throw refusal;
    return reservation;
  }
}

/**
 * What the caller is told when admission did not admit its request (undefined: admitted): the
 * credit left or a budget did not cover its estimate (402), or Postgres could not decide (503).
 */
export function admissionRefusal(outcome: ReserveOutcome, request: Pick<Reservation, 'clientId' | 'productKey'>, billingUrl: string): GatewayError | undefined {
  switch (outcome) {
    case 'admitted':
      return undefined;
    case 'unavailable':
      return dependencyDown('Postgres');
    case 'insufficient_credits':
      return new GatewayError(
        402,
        'insufficient_credits',
        `The tenant's AI credit left does not cover this request's estimate (its input and max_tokens x n); lower max_tokens, or buy credits at ${billingUrl} (or ask your administrator).`,
      );
    case 'budget_client':
    case 'budget_product': {
      const budget = outcome === 'budget_client' ? `OAuth client ${request.clientId}` : `product key ${request.productKey}`;
      return new GatewayError(
        402,
        'budget_exceeded',
        `This month's budget of ${budget} does not cover this request's estimate (its input and max_tokens x n); lower max_tokens, or ask a tenant administrator to raise the budget at ${billingUrl}. Budgets restart each calendar month (UTC).`,
      );
    }
  }
}
