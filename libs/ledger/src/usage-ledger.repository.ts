import { Inject, Injectable, Optional } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, queryPool } from '@flagship/persistence';
import { BudgetedScopes } from './budgeted-scopes';
import { LedgerDurableConnections } from './ledger-durability';
import { type LowBalanceCrossing, type LowBalanceCrossingRow, toCrossing } from './low-balance.repository';
import { FLUSH_BARRIER, MARK_CALLED, MARK_CALLED_ONE } from './statements/durability.sql';
import { RESERVE, RESERVE_BUDGETED, RESERVE_ONE, RESERVE_ONE_BUDGETED, VARIATION_MONTH_USED } from './statements/reserve.sql';
import { RELEASE, SETTLE } from './statements/settle.sql';
import { type CappedOutcome, type LedgerRowRef, type Reservation, type ReserveOutcome, type Settlement, UsageLedger } from './usage-ledger';

/** `retry`: a budget's month row was missing; the statement created it and admitted nothing. */
type StatementOutcome = ReserveOutcome | 'retry';
type BudgetedRow = { id?: string; outcome: StatementOutcome; budgeted: boolean; created_at: Date | null };

/**
 * Rows this process reserved and has not yet completed, remembered with their `created_at` at most
 * this many (the oldest forgotten first: a row forgotten is still completed, its statement reading
 * every partition).
 */
const MAX_REMEMBERED_ROWS = 100_000;

/** The batch statements' parameters: one array per column. */
const batchValues = (batch: readonly Reservation[]): unknown[] => [
  batch.map((r) => r.id),
  batch.map((r) => r.tenantId),
  batch.map((r) => r.clientId),
  batch.map((r) => r.productKey),
  batch.map((r) => r.provider),
  batch.map((r) => r.model),
  batch.map((r) => r.endpoint),
  batch.map((r) => r.stream),
  batch.map((r) => r.estimate),
  batch.map((r) => r.zeroRatedReason),
  batch.map((r) => r.requestId),
  batch.map((r) => r.inputPer1k),
  batch.map((r) => r.outputPer1k),
  batch.map((r) => r.cachedInputPer1k),
  batch.map((r) => r.clientRequestId ?? null),
  batch.map((r) => r.route?.flagKey ?? null),
  batch.map((r) => r.route?.flagVersion ?? null),
  batch.map((r) => r.route?.variation ?? null),
  batch.map((r) => r.route?.contextKind ?? null),
  batch.map((r) => r.route?.reason ?? null),
];

/** The single-request statements' parameters; `$9` is the estimate, or the zero-rated reason. */
const oneValues = (r: Reservation): unknown[] => [
  r.id, r.tenantId, r.clientId, r.productKey, r.provider, r.model, r.endpoint, r.stream, r.estimate,
  r.requestId, r.inputPer1k, r.outputPer1k, r.cachedInputPer1k, r.clientRequestId ?? null,
  r.route?.flagKey ?? null, r.route?.flagVersion ?? null, r.route?.variation ?? null, r.route?.contextKind ?? null, r.route?.reason ?? null,
];

/**
 * The ledger on Postgres; every statement names the tenant of each row. Reservations run as named
 * prepared statements (their planning cost as much as their execution); SETTLE, RELEASE and a batch's
 * stamp look ledger rows up and are planned on each run, so a plan follows the table as it grows.
 */
@Injectable()
export class UsageLedgerRepository extends UsageLedger {
  private readonly budgeted = new BudgetedScopes();
  /**
   * When each row this process reserved and has not completed was written (its `created_at`, as the
   * reservation returned it): the statements completing a batch name the batch's months, so Postgres
   * plans only their partitions (writtenBetween). A replica completes only rows it reserved itself.
   */
  private readonly written = new Map<string, Date>();
  /** The durable connections' DataSource when the app has them (the gateway's durable mode). */
  private readonly durable: DataSource | undefined;

  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource, @Optional() durable?: LedgerDurableConnections) {
    super();
    this.durable = durable?.ds;
  }

  /** Whether flushBarrier() waits for anything (the app opened LedgerDurableConnections). */
  get confirmsFlushes(): boolean {
    return this.durable !== undefined;
  }

  async flushBarrier(): Promise<void> {
    if (this.durable !== undefined) await queryPool(this.durable, { name: 'ledger_flush_barrier', text: FLUSH_BARRIER, values: [] });
  }

  /**
   * Requests not known to be under a budget go through RESERVE, which admits only unbudgeted ones;
   * the rest through RESERVE_BUDGETED, which decides and says why. A `retry` (a month row just made)
   * is asked again, twice more at most, as only a month turning between the tries asks again.
   */
  async admit(batch: readonly Reservation[]): Promise<ReserveOutcome[]> {
    const outcomes = new Map<string, ReserveOutcome>();
    const known = new Set(batch.filter((r) => r.zeroRatedReason === null && this.budgeted.has(r)));
    for (const id of await this.reserveUnbudgeted(batch.filter((r) => !known.has(r)))) outcomes.set(id, 'admitted');
    let pending = batch.filter((r) => !outcomes.has(r.id));
    for (let attempt = 0; attempt < 3 && pending.length > 0; attempt++) {
      let answers: Map<string, StatementOutcome>;
      try {
        answers = await this.reserveBudgeted(pending);
      } catch (err) {
        if (![...outcomes.values()].includes('admitted')) throw err;
        break;
      }
      for (const r of pending) {
        const o = answers.get(r.id)!;
        if (o !== 'retry') outcomes.set(r.id, o);
      }
      pending = pending.filter((r) => !outcomes.has(r.id));
    }
    if (pending.length > 0 && ![...outcomes.values()].includes('admitted')) throw new Error('the reservation could not be decided (budget month rows not found after being created)');
    return batch.map((r) => outcomes.get(r.id) ?? 'unavailable');
  }

  /** The ids admitted, none of them under a budget. RESERVE_ONE only for a lone billable request (see the decision record). */
  private async reserveUnbudgeted(batch: readonly Reservation[]): Promise<Set<string>> {
    if (batch.length === 0) return new Set();
    const lone = batch.length === 1 && batch[0]!.zeroRatedReason === null;
    const rows = lone ? await this.run('gateway_reserve_one', RESERVE_ONE, oneValues(batch[0]!)) : await this.run('gateway_reserve', RESERVE, batchValues(batch));
    for (const row of rows) this.remember(row.id, row.created_at);
    return new Set(rows.map((row) => row.id));
  }

  /** Each billable request's outcome, `retry` included; the budget hints follow what it found. */
  private async reserveBudgeted(batch: readonly Reservation[]): Promise<Map<string, StatementOutcome>> {
    const rows =
      batch.length === 1
        ? (await queryPool<BudgetedRow>(this.ds, { name: 'gateway_reserve_one_budgeted', text: RESERVE_ONE_BUDGETED, values: oneValues(batch[0]!) })).map((row) => ({ ...row, id: batch[0]!.id }))
        : await queryPool<BudgetedRow>(this.ds, { name: 'gateway_reserve_budgeted', text: RESERVE_BUDGETED, values: batchValues(batch) });
    const answers = new Map(rows.map((row) => [row.id!, row]));
    for (const row of rows) if (row.outcome === 'admitted' && row.created_at) this.remember(row.id!, row.created_at);
    const out = new Map<string, StatementOutcome>();
    for (const r of batch) {
      // Not in the answer: the credit did not cover it (or its tenant has no balance row), under no budget.
      const a = answers.get(r.id);
      this.budgeted.note(r, a?.budgeted ?? false);
      out.set(r.id, a?.outcome ?? 'insufficient_credits');
    }
    return out;
  }

  /**
   * In one transaction: the variation's turn (a transaction-scoped advisory lock, so replicas admitting
   * under the same cap queue), its month's use summed from its ledger rows, then RESERVE_ONE_BUDGETED,
   * whose pending row commits before the next in line sums. One round of queueing per capped request;
   * only variations with a cap take this path. Zero-rated requests cost nothing and are admitted as usual.
   */
  async admitUnderCap(r: Reservation, monthlyCap: number): Promise<CappedOutcome> {
    const route = r.route;
    if (r.zeroRatedReason !== null || route?.variation === undefined || route.variation === null) return (await this.admit([r]))[0]!;
    const outcome = await this.ds.transaction(async (m): Promise<CappedOutcome | 'retry'> => {
      await m.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`variation-cap:${r.tenantId}:${r.productKey}:${route.flagKey}:${route.variation}`]);
      const [used] = (await m.query(VARIATION_MONTH_USED, [r.tenantId, r.productKey, route.flagKey, route.variation])) as Array<{ used: string }>;
      if (Number(used?.used ?? 0) + Math.max(r.estimate, 1) > monthlyCap) return 'spend_cap';
      let answer: StatementOutcome = 'retry';
      // A budget month row made by the first try is seen by the next, in the same transaction.
      for (let attempt = 0; attempt < 3 && answer === 'retry'; attempt++) {
        const rows = (await m.query(RESERVE_ONE_BUDGETED, oneValues(r))) as BudgetedRow[];
        answer = rows[0]?.outcome ?? 'insufficient_credits';
        if (answer === 'admitted' && rows[0]!.created_at) this.remember(r.id, rows[0]!.created_at);
      }
      return answer;
    });
    if (outcome === 'retry') throw new Error('the reservation could not be decided (budget month rows not found after being created)');
    return outcome;
  }

  async release(batch: readonly LedgerRowRef[]): Promise<boolean[]> {
    const gone = new Set((await this.run(undefined, RELEASE, [batch.map((r) => r.id), batch.map((r) => r.tenantId), ...this.months(batch)])).map((r) => r.id));
    this.forget(batch);
    return batch.map((r) => gone.has(r.id));
  }

  async markUpstreamCalled(batch: readonly LedgerRowRef[]): Promise<void> {
    if (batch.length === 0) return;
    // On the durable connections when there are: the stamp's commit waiting for the WAL flush also puts
    // the request's reservation (committed asynchronously before it) on disk.
    const ds = this.durable ?? this.ds;
    if (batch.length === 1) await queryPool(ds, { name: 'gateway_mark_called_one', text: MARK_CALLED_ONE, values: [batch[0]!.tenantId, batch[0]!.id, ...this.months(batch)] });
    else await queryPool(ds, { text: MARK_CALLED, values: [batch.map((r) => r.id), batch.map((r) => r.tenantId), ...this.months(batch)] });
  }

  async settleBatch(batch: readonly Settlement[]): Promise<{ completed: boolean[]; crossings: LowBalanceCrossing[] }> {
    const column = <K extends keyof Settlement>(k: K): Array<Settlement[K]> => batch.map((s) => s[k]);
    const values = [
      column('id'), column('tenantId'), column('status'), column('inputTokens'), column('outputTokens'), column('debit'),
      column('provider'), column('latencyMs'), column('usageEstimated'), column('errorCode'), column('cachedTokens'),
      ...this.months(batch),
      // $14: after writtenBetween's two ($12, $13).
      batch.map((s) => s.firstTokenMs ?? null),
    ];
    const rows = await queryPool<{ id: string | null; crossing: LowBalanceCrossingRow | null }>(this.ds, { text: SETTLE, values });
    this.forget(batch);
    const done = new Set(rows.map((r) => r.id));
    const crossings = rows.flatMap((r) => (r.crossing ? [toCrossing(r.crossing)] : []));
    return { completed: batch.map((s) => done.has(s.id)), crossings };
  }

  /** `name`: a named prepared statement, planned once per connection; undefined: planned on every run. */
  private run(name: string | undefined, text: string, values: unknown[]): Promise<Array<{ id: string; created_at: Date }>> {
    return queryPool<{ id: string; created_at: Date }>(this.ds, { name, text, values });
  }

  private remember(id: string, createdAt: Date): void {
    this.written.set(id, createdAt);
    if (this.written.size > MAX_REMEMBERED_ROWS) this.written.delete(this.written.keys().next().value!);
  }

  private forget(batch: ReadonlyArray<{ id: string }>): void {
    for (const r of batch) this.written.delete(r.id);
  }

  /** writtenBetween's two parameters for a batch: its rows' least and greatest created_at, or nulls when one is not known. */
  private months(batch: ReadonlyArray<{ id: string }>): [Date | null, Date | null] {
    let lo: Date | null = null;
    let hi: Date | null = null;
    for (const r of batch) {
      const at = this.written.get(r.id);
      if (at === undefined) return [null, null];
      if (lo === null || at < lo) lo = at;
      if (hi === null || at > hi) hi = at;
    }
    return [lo, hi];
  }
}
