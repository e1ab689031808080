import { Inject, Injectable, Optional } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, queryPool } from '@flagship/persistence';
import { LedgerDurableConnections } from './ledger-durability';
import { type LowBalanceCrossing, type LowBalanceCrossingRow, toCrossing } from './low-balance.repository';

/**
 * One request's reservation and `pending` row. The gateway narrows `provider` and `endpoint` to its
 * own key types; the ledger stores them as text.
 */
export interface Reservation<ProviderKey extends string = string, Endpoint extends string = string> {
  /** The ledger row's id, chosen by the gateway. */
  id: string;
  tenantId: string;
  clientId: string;
  productKey: string;
  /** The provider asked for (the row's `provider` until settled, and its `requested_provider`). */
  provider: ProviderKey;
  model: string;
  endpoint: Endpoint;
  stream: boolean;
  /** Micro-credits held while pending (0 when zero-rated). */
  estimate: number;
  zeroRatedReason: string | null;
  requestId: string;
  /**
   * The prices the request is admitted at (micro-credits per 1,000 tokens), recorded on its row when
   * it is reserved: the estimate is computed from them, and the settlement's debit must be too, so a
   * row's prices are the ones it was charged at (and an abandoned row's, settled at its estimate,
   * have them as well). `cachedInputPer1k`: null when the model has no cached-input price.
   */
  inputPer1k: number;
  outputPer1k: number;
  cachedInputPer1k: number | null;
}

/** One request's outcome. */
export interface Settlement<ProviderKey extends string = string> {
  id: string;
  tenantId: string;
  status: 'succeeded' | 'failed';
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, those the provider reported as cached (0 when it said nothing). */
  cachedTokens: number;
  /** Micro-credits; forced to 0 on a zero-rated row. */
  debit: number;
  provider: ProviderKey;
  latencyMs: number;
  usageEstimated: boolean;
  errorCode: string | null;
}

/** The pending row's columns, the same for the batch and the single statements below. */
const INSERT_PENDING =
  'INSERT INTO usage_ledger (id, tenant_id, client_id, product_key, provider, requested_provider, model, endpoint, stream, status, reserved, zero_rated, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k)';

/**
 * Reserves credit and writes `pending` rows for a batch of requests, in ONE statement: the balances
 * of the batch's billable tenants are locked (in tenant id order, so two replicas never deadlock), a
 * request is admitted while its tenant's available credit (balance - reserved), less the estimates
 * admitted before it in the batch, is above 0, the admitted estimates are added to `reserved`, and
 * the rows of every admitted request are inserted. Zero-rated requests reserve nothing and are always
 * admitted. Because admission needs credit left and settles at most the reserved estimate more, a
 * balance never ends below minus one request's cost, however many replicas reserve at once.
 */
const RESERVE = `
WITH req AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::bigint[], $10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[])
    WITH ORDINALITY AS r(id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, ord)
),
bal AS (
  SELECT c.tenant_id, c.balance - c.reserved AS available
    FROM credit_balances c
   WHERE c.tenant_id IN (SELECT tenant_id FROM req WHERE zero_rated_reason IS NULL)
   ORDER BY c.tenant_id
     FOR UPDATE
),
billable AS (
  SELECT r.*, bal.available - COALESCE(sum(r.estimate) OVER (PARTITION BY r.tenant_id ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS left_before
    FROM req r JOIN bal ON bal.tenant_id = r.tenant_id
   WHERE r.zero_rated_reason IS NULL
),
admitted AS (
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k FROM billable WHERE left_before >= GREATEST(estimate, 1)
  UNION ALL
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, 0, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k FROM req WHERE zero_rated_reason IS NOT NULL
),
held AS (
  UPDATE credit_balances c SET reserved = c.reserved + s.total, updated_at = now()
    FROM (SELECT tenant_id, sum(estimate) AS total FROM admitted WHERE zero_rated_reason IS NULL GROUP BY tenant_id) s
   WHERE c.tenant_id = s.tenant_id
)
${INSERT_PENDING}
SELECT id, tenant_id, client_id, product_key, provider, provider, model, endpoint, stream, 'pending', estimate, zero_rated_reason IS NOT NULL, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k
  FROM admitted
RETURNING id`;

/**
 * RESERVE for a batch of one billable request, the usual case below a few hundred requests a second:
 * the same admission (credit left covering the estimate, checked on the row's latest version under its lock, as UPDATE
 * re-reads a row another transaction changed) and the same row, without the batch's unnest, window
 * and CTEs, which cost about 0.1 ms of the request's wait each time (measured here: 0.30 ms against
 * 0.18 ms a statement, one connection, after warm-up).
 */
const RESERVE_ONE = `
WITH held AS (
  UPDATE credit_balances SET reserved = reserved + $9::bigint, updated_at = now()
   WHERE tenant_id = $2::uuid AND balance - reserved >= GREATEST($9::bigint, 1)
  RETURNING tenant_id
)
${INSERT_PENDING}
SELECT $1::uuid, $2::uuid, $3, $4, $5, $5, $6, $7, $8::bool, 'pending', $9::bigint, false, NULL, $10, $11::bigint, $12::bigint, $13::bigint FROM held
RETURNING id`;

/** RESERVE for a batch of one zero-rated request: nothing held, the row always written. */
const RESERVE_ONE_ZERO_RATED = `
${INSERT_PENDING}
VALUES ($1::uuid, $2::uuid, $3, $4, $5, $5, $6, $7, $8::bool, 'pending', 0, true, $9, $10, $11::bigint, $12::bigint, $13::bigint)
RETURNING id`;

/**
 * Low-balance crossings, as CTEs after SETTLE's `moved_balances` (its tenants' new balances): a tenant
 * whose alert is armed and whose balance is now at or below its threshold is disarmed and one crossing
 * recorded, in the settlement's own statement (no statement more per request). The UPDATE is
 * conditional on `armed`, and the settlement already holds the tenant's balance row lock, so of two
 * replicas settling at once the second re-reads the alert row disarmed and records nothing; a grant
 * lifting the balance above the threshold re-arms it (CreditsRepository.grantCredits).
 */
export const LOW_BALANCE_CROSSINGS = `crossed AS (
  UPDATE low_balance_alerts a SET armed = false, updated_at = now()
    FROM moved_balances b
   WHERE a.tenant_id = b.tenant_id AND a.armed AND b.balance <= a.threshold
  RETURNING a.tenant_id, a.threshold, b.balance
),
recorded AS (
  INSERT INTO low_balance_crossings (tenant_id, threshold, balance)
  SELECT tenant_id, threshold, balance FROM crossed
  RETURNING id, tenant_id, threshold, balance, crossed_at
)`;

/**
 * Completes a batch of rows still `pending` (a row the reconciler already marked `abandoned` had its
 * reservation released there, so it is left alone), releases their reservations and debits their
 * cost, in ONE statement; balances are locked in tenant id order, as in RESERVE. "Still pending" is
 * said as `completed_at IS NULL` (the same thing, by the usage_ledger_completed_iff_settled check):
 * with `status = 'pending'` Postgres read every pending row through usage_ledger_pending_idx and
 * joined them with the batch, and that index keeps an entry for every row settled since the last
 * vacuum (autovacuum waits for a fifth of the table to be dead): with 200,000 rows settled since
 * then, a settlement of two rows read 551 index pages and took 1.3 ms (24 ms the first time), where
 * looking each row up by its primary key, as now, reads 8 pages in 0.14 ms (EXPLAIN ANALYZE). In
 * tools/bench's short runs the old statement read about 440 entries per settlement, and six A/B
 * runs showed no consistent difference in throughput, latency or Postgres CPU there.
 * Its rows: one per completed ledger row (`id`), and one per low-balance crossing it recorded
 * (`crossing`, see LOW_BALANCE_CROSSINGS).
 */
export const SETTLE = `
WITH s AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::int[], $6::bigint[], $7::text[], $8::int[], $9::bool[], $10::text[], $11::int[])
    AS s(id, tenant_id, status, input_tokens, output_tokens, debit, provider, latency_ms, usage_estimated, error_code, cached_tokens)
),
done AS (
  UPDATE usage_ledger u
     SET status = s.status, input_tokens = s.input_tokens, output_tokens = s.output_tokens, cached_tokens = s.cached_tokens,
         debit = CASE WHEN u.zero_rated THEN 0 ELSE s.debit END,
         provider = s.provider, latency_ms = s.latency_ms, usage_estimated = s.usage_estimated, error_code = s.error_code,
         completed_at = now()
    FROM s
   WHERE u.tenant_id = s.tenant_id AND u.id = s.id AND u.completed_at IS NULL
  RETURNING u.id, u.tenant_id, u.reserved, u.debit
),
moved AS (
  SELECT tenant_id, sum(reserved) AS released, sum(debit) AS debited FROM done GROUP BY tenant_id HAVING sum(reserved) > 0 OR sum(debit) > 0
),
locked AS (
  SELECT c.tenant_id FROM credit_balances c WHERE c.tenant_id IN (SELECT tenant_id FROM moved) ORDER BY c.tenant_id FOR UPDATE
),
moved_balances AS (
  UPDATE credit_balances c SET reserved = c.reserved - m.released, balance = c.balance - m.debited, updated_at = now()
    FROM moved m JOIN locked l ON l.tenant_id = m.tenant_id
   WHERE c.tenant_id = m.tenant_id
  RETURNING c.tenant_id, c.balance
),
${LOW_BALANCE_CROSSINGS}
SELECT id, NULL::json AS crossing FROM done
UNION ALL
SELECT NULL, json_build_object('id', id, 'tenantId', tenant_id, 'threshold', threshold, 'balance', balance, 'crossedAt', crossed_at) FROM recorded`;

/**
 * Takes back reservations whose requests were refused after all (the rate limit, checked in Redis
 * while the reservation was being made, said 429, or Redis was down): their `pending` rows are
 * deleted, as though never written (a refused request leaves no row), and their estimates leave
 * `reserved`; balances locked in tenant id order, as in RESERVE. A row no longer pending (the
 * reconciler got there first, and released it) is left alone; "pending" said as in SETTLE.
 */
export const RELEASE = `
WITH gone AS (
  DELETE FROM usage_ledger u
   USING unnest($1::uuid[], $2::uuid[]) AS r(id, tenant_id)
   WHERE u.tenant_id = r.tenant_id AND u.id = r.id AND u.completed_at IS NULL
  RETURNING u.id, u.tenant_id, u.reserved
),
moved AS (
  SELECT tenant_id, sum(reserved) AS released FROM gone GROUP BY tenant_id HAVING sum(reserved) > 0
),
locked AS (
  SELECT c.tenant_id FROM credit_balances c WHERE c.tenant_id IN (SELECT tenant_id FROM moved) ORDER BY c.tenant_id FOR UPDATE
),
moved_balances AS (
  UPDATE credit_balances c SET reserved = c.reserved - m.released, updated_at = now()
    FROM moved m JOIN locked l ON l.tenant_id = m.tenant_id
   WHERE c.tenant_id = m.tenant_id
)
SELECT id FROM gone`;

/**
 * The "upstream called" marker: stamps the rows of requests the gateway is sending to their provider
 * (see migration 1763840100000). Only a row still pending is stamped (a settlement that got there
 * first already recorded the outcome). One row is looked up by its primary key as a named prepared
 * statement (a generic plan on a unique equality is an index scan whatever the table's size); a batch
 * joins an unnest and is planned each time, for SETTLE's reason below.
 */
const MARK_CALLED_ONE = `UPDATE usage_ledger SET upstream_called_at = now() WHERE tenant_id = $1::uuid AND id = $2::uuid AND completed_at IS NULL RETURNING id`;
const MARK_CALLED = `
UPDATE usage_ledger u SET upstream_called_at = now()
  FROM unnest($1::uuid[], $2::uuid[]) AS r(id, tenant_id)
 WHERE u.tenant_id = r.tenant_id AND u.id = r.id AND u.completed_at IS NULL
RETURNING u.id`;

/**
 * A commit that waits for the WAL flush (run on a synchronous_commit=on connection), and so puts on
 * disk every record written before it, including the asynchronous commits of RESERVE and SETTLE on
 * the app's pool, which released their balance row locks without waiting for a flush. It must write
 * WAL to wait at all (Postgres skips the flush of a transaction that wrote none), so it upserts its
 * connection's own row of ledger_flush_barriers (migration 1763840200000): no lock shared with anyone.
 */
const FLUSH_BARRIER = `
INSERT INTO ledger_flush_barriers (backend_pid, flushed_at) VALUES (pg_backend_pid(), now())
ON CONFLICT (backend_pid) DO UPDATE SET flushed_at = excluded.flushed_at`;

/**
 * The gateway's writes to usage_ledger and credit_balances; every statement names the tenant of each
 * row. The reservations run as named prepared statements on the DataSource's pg pool: planning RESERVE
 * took about as long as executing it (0.45 ms each, EXPLAIN ANALYZE), and a prepared statement is
 * planned once per connection, not once per batch. SETTLE and RELEASE, which look rows of
 * usage_ledger up, are planned each time they run (unnamed statements), with the table as it is
 * then: a plan a connection cached while the ledger was small (a new installation, or tools/bench's
 * fresh database) is a sequential scan, kept as the table grew until autovacuum next analysed it
 * (seen in tools/bench: 394 settlements reading 2.8 million rows). Planning SETTLE costs Postgres 0.35
 * to 0.5 ms (its execution about 0.15 ms), once per settlement batch (GATEWAY_SETTLE_GATHER_MS).
 */
@Injectable()
export class UsageLedgerRepository {
  /** The durable connections' DataSource when the app has them (the gateway's durable mode), else the app's. */
  private readonly durable: DataSource | undefined;

  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource, @Optional() durable?: LedgerDurableConnections) {
    this.durable = durable?.ds;
  }

  /** Whether flushBarrier() waits for anything (the app opened LedgerDurableConnections). */
  get confirmsFlushes(): boolean {
    return this.durable !== undefined;
  }

  /**
   * Resolves once everything this process committed before the call is on disk (Postgres' WAL
   * flushed past it), when the app has durable connections; at once otherwise. See FLUSH_BARRIER.
   */
  async flushBarrier(): Promise<void> {
    if (this.durable !== undefined) await queryPool(this.durable, { name: 'ledger_flush_barrier', text: FLUSH_BARRIER, values: [] });
  }

  /** `name`: a named prepared statement, planned once per connection; undefined: planned on every run. */
  private run(name: string | undefined, text: string, values: unknown[]): Promise<Array<{ id: string }>> {
    return queryPool<{ id: string }>(this.ds, { name, text, values });
  }

  /** For each reservation, in order: whether it was admitted (row written, credit held). */
  async reserve(batch: readonly Reservation[]): Promise<boolean[]> {
    if (batch.length === 1) {
      const r = batch[0]!;
      const common = [r.id, r.tenantId, r.clientId, r.productKey, r.provider, r.model, r.endpoint, r.stream];
      const prices = [r.inputPer1k, r.outputPer1k, r.cachedInputPer1k];
      const rows =
        r.zeroRatedReason === null
          ? await this.run('gateway_reserve_one', RESERVE_ONE, [...common, r.estimate, r.requestId, ...prices])
          : await this.run('gateway_reserve_one_zero_rated', RESERVE_ONE_ZERO_RATED, [...common, r.zeroRatedReason, r.requestId, ...prices]);
      return [rows.length === 1];
    }
    const rows = await this.run('gateway_reserve', RESERVE, [
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
    ]);
    const admitted = new Set(rows.map((r) => r.id));
    return batch.map((r) => admitted.has(r.id));
  }

  /** For each reservation, in order: whether its row was still pending and is now gone, its estimate released. */
  async release(batch: ReadonlyArray<Pick<Reservation, 'id' | 'tenantId'>>): Promise<boolean[]> {
    const rows = await this.run(undefined, RELEASE, [batch.map((r) => r.id), batch.map((r) => r.tenantId)]);
    const gone = new Set(rows.map((r) => r.id));
    return batch.map((r) => gone.has(r.id));
  }

  /**
   * Stamps "upstream called" on each request's row (see MARK_CALLED). Resolves once the stamps are
   * committed; the rows no longer pending are simply not stamped.
   */
  async markUpstreamCalled(batch: ReadonlyArray<Pick<Reservation, 'id' | 'tenantId'>>): Promise<void> {
    if (batch.length === 0) return;
    // On the durable connections when there are: the stamp's commit waits for the WAL flush, which
    // also puts the request's reservation (committed asynchronously before it) on disk.
    const ds = this.durable ?? this.ds;
    if (batch.length === 1) await queryPool(ds, { name: 'gateway_mark_called_one', text: MARK_CALLED_ONE, values: [batch[0]!.tenantId, batch[0]!.id] });
    else await queryPool(ds, { text: MARK_CALLED, values: [batch.map((r) => r.id), batch.map((r) => r.tenantId)] });
  }

  /** For each settlement, in order: whether its row was still pending and is now complete. */
  async settle(batch: readonly Settlement[]): Promise<boolean[]> {
    return (await this.settleBatch(batch)).completed;
  }

  /** settle(), and the low-balance crossings the batch recorded (committed when this resolves). */
  async settleBatch(batch: readonly Settlement[]): Promise<{ completed: boolean[]; crossings: LowBalanceCrossing[] }> {
    const rows = await queryPool<{ id: string | null; crossing: LowBalanceCrossingRow | null }>(this.ds, { text: SETTLE, values: [
      batch.map((s) => s.id),
      batch.map((s) => s.tenantId),
      batch.map((s) => s.status),
      batch.map((s) => s.inputTokens),
      batch.map((s) => s.outputTokens),
      batch.map((s) => s.debit),
      batch.map((s) => s.provider),
      batch.map((s) => s.latencyMs),
      batch.map((s) => s.usageEstimated),
      batch.map((s) => s.errorCode),
      batch.map((s) => s.cachedTokens),
    ] });
    const done = new Set(rows.map((r) => r.id));
    const crossings = rows.flatMap((r) => (r.crossing ? [toCrossing(r.crossing)] : []));
    return { completed: batch.map((s) => done.has(s.id)), crossings };
  }
}
