import { Inject, Injectable, Optional } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, queryPool } from '@flagship/persistence';
import { LedgerDurableConnections } from './ledger-durability';
import { type LowBalanceCrossing, type LowBalanceCrossingRow, RECORDED_CROSSINGS, toCrossing } from './low-balance.repository';

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
  /**
   * The caller's own `x-request-id` when it is a sane token (service-kit's clientRequestIdOf: 1 to 128
   * of A-Z a-z 0-9 . _ : -), so it can match its request to the row; absent or null: none sent.
   */
  clientRequestId?: string | null;
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
  'INSERT INTO usage_ledger (id, tenant_id, client_id, product_key, provider, requested_provider, model, endpoint, stream, status, reserved, zero_rated, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, budget_month, client_budget_held, product_budget_held, client_request_id)';

/** The UTC calendar month a reservation made now counts in (budget_months.month). */
const THIS_MONTH = `date_trunc('month', now() AT TIME ZONE 'UTC')::date`;

/**
 * What admission said of one reservation. `budget_client` / `budget_product`: the credit covered it but
 * this month's budget of its OAuth client / product key did not. `unavailable`: its statement failed
 * after others of its batch were admitted (answer it as Postgres being down; nothing was held for it).
 * `retry` stays inside the repository:
 * a budget applied whose month row did not exist yet (the first request of a month); the statement
 * created it and admitted nothing, and the request is admitted again on the row.
 */
export type ReserveOutcome = 'admitted' | 'insufficient_credits' | 'budget_client' | 'budget_product' | 'unavailable';
type StatementOutcome = ReserveOutcome | 'retry';

/**
 * The batch statements' first CTEs, the same in RESERVE and RESERVE_BUDGETED: the batch's requests
 * (`$1`..`$15`, in order: `ord`) and their billable tenants' balance rows, locked in tenant id order
 * (so two replicas never deadlock) with the credit each has left.
 */
const BATCH_AND_BALANCES = `req AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::bigint[], $10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::text[])
    WITH ORDINALITY AS r(id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_request_id, ord)
),
bal AS (
  SELECT c.tenant_id, c.balance - c.reserved AS available
    FROM credit_balances c
   WHERE c.tenant_id IN (SELECT tenant_id FROM req WHERE zero_rated_reason IS NULL)
   ORDER BY c.tenant_id
     FOR UPDATE
)`;

/**
 * Reserves credit and writes `pending` rows for a batch of requests, in ONE statement: the balances
 * of the batch's billable tenants are locked (in tenant id order, so two replicas never deadlock), a
 * request is admitted while its tenant's available credit (balance - reserved), less the estimates
 * admitted before it in the batch, is above 0, the admitted estimates are added to `reserved`, and
 * the rows of every admitted request are inserted. Zero-rated requests reserve nothing and are always
 * admitted. Because admission needs credit left and settles at most the reserved estimate more, a
 * balance never ends below minus one request's cost, however many replicas reserve at once.
 *
 * It admits only requests none of whose budgets is set (RESERVE_ONE's NOT EXISTS probe of `budgets`,
 * per request); a billable request it does not admit is asked again of RESERVE_BUDGETED, which
 * says why or admits it under its budgets. Measured as RESERVE_ONE is (below), 800 runs each, a batch
 * of 4 billable requests of a tenant without budgets: 0.34 ms median before budgets, 0.35 ms with the
 * probe; RESERVE_BUDGETED for the same batch 0.52 ms (its budget CTEs, joins and two more window
 * sorts run for every batch), hence it only for what needs it.
 */
const RESERVE = `
WITH ${BATCH_AND_BALANCES},
billable AS (
  SELECT r.*, bal.available - COALESCE(sum(r.estimate) OVER (PARTITION BY r.tenant_id ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS left_before
    FROM req r JOIN bal ON bal.tenant_id = r.tenant_id
   WHERE r.zero_rated_reason IS NULL
     AND NOT EXISTS (SELECT 1 FROM budgets g WHERE g.tenant_id = r.tenant_id AND (g.scope_kind, g.scope_id) IN (('client', r.client_id), ('product', r.product_key)))
),
admitted AS (
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_request_id FROM billable WHERE left_before >= GREATEST(estimate, 1)
  UNION ALL
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, 0, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_request_id FROM req WHERE zero_rated_reason IS NOT NULL
),
held AS (
  UPDATE credit_balances c SET reserved = c.reserved + s.total, updated_at = now()
    FROM (SELECT tenant_id, sum(estimate) AS total FROM admitted WHERE zero_rated_reason IS NULL GROUP BY tenant_id) s
   WHERE c.tenant_id = s.tenant_id
)
${INSERT_PENDING}
SELECT id, tenant_id, client_id, product_key, provider, provider, model, endpoint, stream, 'pending', estimate, zero_rated_reason IS NOT NULL, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, NULL::date, false, false, client_request_id
  FROM admitted
RETURNING id`;

/**
 * RESERVE with budgets, for the requests of a batch RESERVE did not admit or that were under a budget
 * the last time: the same admission on the credit, in ONE statement, and the budgets in it too.
 * Its rows: each request's outcome (a request of a tenant without a balance row is not there: no
 * credit) and whether a budget applied to it.
 *
 * Budgets: the budgets of the batch's billable requests (`lim`: their OAuth
 * client's and their product key's, when set) have this month's budget_months rows locked AFTER the
 * balances (`mon`, in (tenant, kind, scope) order, and only for tenants whose balance row `bal` has
 * locked: every statement that changes a month row's figures holds its tenant's balance lock first,
 * and the one other writer, BudgetsRepository.set, only inserts a missing row holding no balance lock,
 * so month rows add no lock cycle), and a request is admitted only while each of its budgets' cap - spent -
 * reserved, less the estimates before it in the batch under that budget, covers its estimate, as for
 * the balance. Its estimate is then added to each budget's `reserved` and the row records the month
 * and which budgets hold it. A budget with no month row yet (`missing`: a new month) has its row
 * created here (`born`) and the request is answered `retry`: a row another transaction creates is
 * invisible to this statement's snapshot, so admission never counts on a row it could not lock.
 */
const RESERVE_BUDGETED = `
WITH ${BATCH_AND_BALANCES},
lim AS MATERIALIZED (
  SELECT g.tenant_id, g.scope_kind, g.scope_id, g.monthly_cap
    FROM budgets g
   WHERE (g.tenant_id, g.scope_kind, g.scope_id) IN (
           SELECT tenant_id, 'client'::text, client_id FROM req WHERE zero_rated_reason IS NULL
           UNION ALL
           SELECT tenant_id, 'product'::text, product_key FROM req WHERE zero_rated_reason IS NULL)
),
mon AS (
  SELECT m.tenant_id, m.scope_kind, m.scope_id, m.spent + m.reserved AS used
    FROM budget_months m
   WHERE m.month = ${THIS_MONTH}
     AND (m.tenant_id, m.scope_kind, m.scope_id) IN (SELECT tenant_id, scope_kind, scope_id FROM lim)
     AND m.tenant_id IN (SELECT tenant_id FROM bal)
   ORDER BY m.tenant_id, m.scope_kind, m.scope_id
     FOR UPDATE
),
billable AS (
  SELECT r.*,
         bal.available - COALESCE(sum(r.estimate) OVER (PARTITION BY r.tenant_id ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS left_before,
         cl.tenant_id IS NOT NULL AS client_limited,
         cl.tenant_id IS NOT NULL AND cm.tenant_id IS NULL AS client_missing,
         cl.monthly_cap - cm.used - COALESCE(sum(r.estimate) OVER (PARTITION BY r.tenant_id, r.client_id ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS client_left,
         pl.tenant_id IS NOT NULL AS product_limited,
         pl.tenant_id IS NOT NULL AND pm.tenant_id IS NULL AS product_missing,
         pl.monthly_cap - pm.used - COALESCE(sum(r.estimate) OVER (PARTITION BY r.tenant_id, r.product_key ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS product_left
    FROM req r JOIN bal ON bal.tenant_id = r.tenant_id
    LEFT JOIN lim cl ON cl.tenant_id = r.tenant_id AND cl.scope_kind = 'client' AND cl.scope_id = r.client_id
    LEFT JOIN mon cm ON cm.tenant_id = r.tenant_id AND cm.scope_kind = 'client' AND cm.scope_id = r.client_id
    LEFT JOIN lim pl ON pl.tenant_id = r.tenant_id AND pl.scope_kind = 'product' AND pl.scope_id = r.product_key
    LEFT JOIN mon pm ON pm.tenant_id = r.tenant_id AND pm.scope_kind = 'product' AND pm.scope_id = r.product_key
   WHERE r.zero_rated_reason IS NULL
),
judged AS (
  SELECT b.*,
         CASE WHEN b.left_before < GREATEST(b.estimate, 1) THEN 'insufficient_credits'
              WHEN b.client_limited AND NOT b.client_missing AND b.client_left < GREATEST(b.estimate, 1) THEN 'budget_client'
              WHEN b.product_limited AND NOT b.product_missing AND b.product_left < GREATEST(b.estimate, 1) THEN 'budget_product'
              WHEN b.client_missing OR b.product_missing THEN 'retry'
              ELSE 'admitted' END AS outcome
    FROM billable b
),
admitted AS (
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_limited, product_limited, client_request_id
    FROM judged WHERE outcome = 'admitted'
  UNION ALL
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, 0, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, false, false, client_request_id
    FROM req WHERE zero_rated_reason IS NOT NULL
),
held AS (
  UPDATE credit_balances c SET reserved = c.reserved + s.total, updated_at = now()
    FROM (SELECT tenant_id, sum(estimate) AS total FROM admitted WHERE zero_rated_reason IS NULL GROUP BY tenant_id) s
   WHERE c.tenant_id = s.tenant_id
),
budget_held AS (
  UPDATE budget_months m SET reserved = m.reserved + s.total, updated_at = now()
    FROM (SELECT tenant_id, 'client'::text AS scope_kind, client_id AS scope_id, sum(estimate) AS total FROM admitted WHERE client_limited GROUP BY tenant_id, client_id
          UNION ALL
          SELECT tenant_id, 'product'::text, product_key, sum(estimate) FROM admitted WHERE product_limited GROUP BY tenant_id, product_key) s
   WHERE m.tenant_id = s.tenant_id AND m.scope_kind = s.scope_kind AND m.scope_id = s.scope_id AND m.month = ${THIS_MONTH}
),
born AS (
  INSERT INTO budget_months (tenant_id, scope_kind, scope_id, month)
  SELECT tenant_id, 'client', client_id, ${THIS_MONTH} FROM judged WHERE outcome = 'retry' AND client_missing
  UNION
  SELECT tenant_id, 'product', product_key, ${THIS_MONTH} FROM judged WHERE outcome = 'retry' AND product_missing
  ON CONFLICT DO NOTHING
),
written AS (
  ${INSERT_PENDING}
  SELECT id, tenant_id, client_id, product_key, provider, provider, model, endpoint, stream, 'pending', estimate, zero_rated_reason IS NOT NULL, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k,
         CASE WHEN client_limited OR product_limited THEN ${THIS_MONTH} END, client_limited, product_limited, client_request_id
    FROM admitted
  RETURNING id
)
SELECT w.id, 'admitted' AS outcome, a.client_limited OR a.product_limited AS budgeted FROM written w JOIN admitted a ON a.id = w.id
UNION ALL
SELECT id, outcome, client_limited OR product_limited FROM judged WHERE outcome <> 'admitted'`;

/**
 * RESERVE for a batch of one billable request, the usual case below a few hundred requests a second:
 * the same admission (credit left covering the estimate, checked on the row's latest version under its lock, as UPDATE
 * re-reads a row another transaction changed) and the same row, without the batch's unnest, window
 * and CTEs, which cost about 0.1 ms of the request's wait each time (measured here: 0.30 ms against
 * 0.18 ms a statement, one connection, after warm-up). It admits only a request none of whose budgets
 * is set (the NOT EXISTS probe of `budgets`: its primary key once the table is more than a few pages
 * and analysed; at 100 rows Postgres reads its 2 pages instead); a request it does not admit is asked
 * again of RESERVE_ONE_BUDGETED, which says why (credit or budget) or admits it under its budgets.
 *
 * Measured with EXPLAIN (ANALYZE, TIMING OFF) of the prepared statements, alternating, 1,500 runs
 * each, a tenant without budgets beside another tenant's 100: before budgets 0.084 ms median
 * execution, this statement 0.092 ms (the probe: 2 more buffer hits), RESERVE_ONE_BUDGETED for the same
 * request 0.133 ms (its dozen CTEs are initialised on every run even though a one-time filter stops
 * each one: "never executed"). Hence two statements, and a request known to be under a budget going
 * straight to the second (UsageLedgerRepository.budgetedScopes).
 */
const RESERVE_ONE = `
WITH held AS (
  UPDATE credit_balances SET reserved = reserved + $9::bigint, updated_at = now()
   WHERE tenant_id = $2::uuid AND balance - reserved >= GREATEST($9::bigint, 1)
     AND NOT EXISTS (SELECT 1 FROM budgets WHERE tenant_id = $2::uuid AND (scope_kind, scope_id) IN (('client', $3), ('product', $4)))
  RETURNING tenant_id
)
${INSERT_PENDING}
SELECT $1::uuid, $2::uuid, $3, $4, $5, $5, $6, $7, $8::bool, 'pending', $9::bigint, false, NULL, $10, $11::bigint, $12::bigint, $13::bigint, NULL, false, false, $14::text FROM held
RETURNING id`;

/**
 * RESERVE for one billable request that RESERVE_ONE did not admit, or whose client or product key had
 * a budget the last time: one statement either way. With no budget set (`lim` empty) it takes `plain`,
 * RESERVE_ONE's own conditional UPDATE; every other CTE is gated on `lim` by a one-time filter, so it
 * touches no other row. With a budget it takes the budgeted branch: the balance row locked first
 * (`bal`), then the budgets' month rows (`mon`, in kind order), the verdict computed from what they
 * hold now, and only on `admitted` both moved. Its rows: the outcome (none: the credit did not cover
 * it) and whether a budget applied, as RESERVE explains, `retry` included.
 */
const RESERVE_ONE_BUDGETED = `
WITH lim AS MATERIALIZED (
  SELECT scope_kind, scope_id, monthly_cap FROM budgets
   WHERE tenant_id = $2::uuid AND (scope_kind, scope_id) IN (('client', $3), ('product', $4))
),
plain AS (
  UPDATE credit_balances SET reserved = reserved + $9::bigint, updated_at = now()
   WHERE tenant_id = $2::uuid AND balance - reserved >= GREATEST($9::bigint, 1) AND NOT EXISTS (SELECT 1 FROM lim)
  RETURNING tenant_id
),
bal AS (
  SELECT balance - reserved AS available FROM credit_balances
   WHERE tenant_id = $2::uuid AND EXISTS (SELECT 1 FROM lim)
     FOR UPDATE
),
mon AS (
  SELECT m.scope_kind, m.scope_id, m.spent + m.reserved AS used FROM budget_months m
   WHERE m.tenant_id = $2::uuid AND m.month = ${THIS_MONTH}
     AND ((m.scope_kind = 'client' AND m.scope_id = $3) OR (m.scope_kind = 'product' AND m.scope_id = $4))
     AND EXISTS (SELECT 1 FROM bal)
   ORDER BY m.scope_kind, m.scope_id
     FOR UPDATE
),
checked AS (
  SELECT l.scope_kind, l.scope_id, m.used IS NULL AS missing, l.monthly_cap - m.used AS left_now
    FROM lim l LEFT JOIN mon m ON m.scope_kind = l.scope_kind
),
verdict AS (
  SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM bal WHERE available >= GREATEST($9::bigint, 1)) THEN 'insufficient_credits'
              WHEN EXISTS (SELECT 1 FROM checked WHERE scope_kind = 'client' AND left_now < GREATEST($9::bigint, 1)) THEN 'budget_client'
              WHEN EXISTS (SELECT 1 FROM checked WHERE scope_kind = 'product' AND left_now < GREATEST($9::bigint, 1)) THEN 'budget_product'
              WHEN EXISTS (SELECT 1 FROM checked WHERE missing) THEN 'retry'
              ELSE 'admitted' END AS outcome
   WHERE EXISTS (SELECT 1 FROM lim)
),
held AS (
  UPDATE credit_balances SET reserved = reserved + $9::bigint, updated_at = now()
   WHERE tenant_id = $2::uuid AND (SELECT outcome FROM verdict) = 'admitted'
  RETURNING tenant_id
),
budget_held AS (
  UPDATE budget_months m SET reserved = m.reserved + $9::bigint, updated_at = now()
    FROM mon
   WHERE (SELECT outcome FROM verdict) = 'admitted'
     AND m.tenant_id = $2::uuid AND m.month = ${THIS_MONTH} AND m.scope_kind = mon.scope_kind AND m.scope_id = mon.scope_id
),
born AS (
  INSERT INTO budget_months (tenant_id, scope_kind, scope_id, month)
  SELECT $2::uuid, scope_kind, scope_id, ${THIS_MONTH} FROM checked WHERE missing AND (SELECT outcome FROM verdict) = 'retry'
  ON CONFLICT DO NOTHING
),
written AS (
  ${INSERT_PENDING}
  SELECT $1::uuid, $2::uuid, $3, $4, $5, $5, $6, $7, $8::bool, 'pending', $9::bigint, false, NULL, $10, $11::bigint, $12::bigint, $13::bigint,
         CASE WHEN EXISTS (SELECT 1 FROM lim) THEN ${THIS_MONTH} END,
         EXISTS (SELECT 1 FROM lim WHERE scope_kind = 'client'), EXISTS (SELECT 1 FROM lim WHERE scope_kind = 'product'), $14::text
    FROM (SELECT tenant_id FROM plain UNION ALL SELECT tenant_id FROM held) h
  RETURNING id
)
SELECT 'admitted' AS outcome, EXISTS (SELECT 1 FROM lim) AS budgeted FROM written
UNION ALL
SELECT outcome, true FROM verdict WHERE outcome <> 'admitted'`;

/** RESERVE for a batch of one zero-rated request: nothing held (no budget either), the row always written. */
const RESERVE_ONE_ZERO_RATED = `
${INSERT_PENDING}
VALUES ($1::uuid, $2::uuid, $3, $4, $5, $5, $6, $7, $8::bool, 'pending', 0, true, $9, $10, $11::bigint, $12::bigint, $13::bigint, NULL, false, false, $14::text)
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
 * The budget side of a completion, as CTEs after a statement's `locked` (its tenants' balance rows,
 * locked in tenant id order) over `rows` (the completed ledger rows, with their budget columns,
 * `reserved` and `debit`): each budget month a row reserved in gets its estimate back out of
 * `reserved` and its debit into `spent`. Month rows are locked after the balance rows (only those of
 * tenants `locked` holds) and in (tenant, kind, scope, month) order, as RESERVE locks them.
 */
export function budgetSettlement(rows: string): string {
  return `budget_moved AS (
  SELECT tenant_id, scope_kind, scope_id, month, sum(reserved) AS released, sum(debit) AS debited FROM (
    SELECT tenant_id, 'client'::text AS scope_kind, client_id AS scope_id, budget_month AS month, reserved, debit FROM ${rows} WHERE client_budget_held
    UNION ALL
    SELECT tenant_id, 'product'::text, product_key, budget_month, reserved, debit FROM ${rows} WHERE product_budget_held
  ) x GROUP BY tenant_id, scope_kind, scope_id, month HAVING sum(reserved) > 0 OR sum(debit) > 0
),
budget_locked AS (
  SELECT m.tenant_id, m.scope_kind, m.scope_id, m.month FROM budget_months m
   WHERE (m.tenant_id, m.scope_kind, m.scope_id, m.month) IN (SELECT tenant_id, scope_kind, scope_id, month FROM budget_moved)
     AND m.tenant_id IN (SELECT tenant_id FROM locked)
   ORDER BY m.tenant_id, m.scope_kind, m.scope_id, m.month
     FOR UPDATE
),
budget_settled AS (
  UPDATE budget_months m SET reserved = m.reserved - b.released, spent = m.spent + b.debited, updated_at = now()
    FROM budget_moved b JOIN budget_locked l USING (tenant_id, scope_kind, scope_id, month)
   WHERE m.tenant_id = b.tenant_id AND m.scope_kind = b.scope_kind AND m.scope_id = b.scope_id AND m.month = b.month
)`;
}

/**
 * Completes a batch of rows still `pending` (a row the reconciler already marked `abandoned` had its
 * reservation released there, so it is left alone), releases their reservations and debits their
 * cost, in ONE statement; balances are locked in tenant id order, as in RESERVE, then the budget
 * months the rows reserved in (budgetSettlement). "Still pending" is
 * said as `completed_at IS NULL` (the same thing, by the usage_ledger_completed_iff_settled check):
 * with `status = 'pending'` Postgres read every pending row through usage_ledger_pending_idx and
 * joined them with the batch, and that index keeps an entry for every row settled since the last
 * vacuum (autovacuum waits for a fifth of the table to be dead): with 200,000 rows settled since
 * then, a settlement of two rows read 551 index pages and took 1.3 ms (24 ms the first time), where
 * looking each row up by its primary key, as now, reads 8 pages in 0.14 ms (EXPLAIN ANALYZE). In
 * tools/bench's short runs the old statement read about 440 entries per settlement, and six A/B
 * runs showed no consistent difference in throughput, latency or Postgres CPU there.
 * A debit above the row's reservation is recorded as it is and the row marked `overrun` (a provider
 * that ignored the output limit): admission's bound on a balance holds only without such rows.
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
         overrun = NOT u.zero_rated AND s.debit > u.reserved,
         provider = s.provider, latency_ms = s.latency_ms, usage_estimated = s.usage_estimated, error_code = s.error_code,
         completed_at = now()
    FROM s
   WHERE u.tenant_id = s.tenant_id AND u.id = s.id AND u.completed_at IS NULL
  RETURNING u.id, u.tenant_id, u.reserved, u.debit, u.client_id, u.product_key, u.budget_month, u.client_budget_held, u.product_budget_held
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
${budgetSettlement('done')},
${LOW_BALANCE_CROSSINGS}
SELECT id, NULL::json AS crossing FROM done
UNION ALL
SELECT NULL, ${RECORDED_CROSSINGS} FROM recorded`;

/**
 * Takes back reservations whose requests were refused after all (the rate limit, checked in Redis
 * while the reservation was being made, said 429, or Redis was down): their `pending` rows are
 * deleted, as though never written (a refused request leaves no row), and their estimates leave
 * `reserved` (and their budgets'); balances locked in tenant id order, as in RESERVE. A row no longer pending (the
 * reconciler got there first, and released it) is left alone; "pending" said as in SETTLE.
 */
export const RELEASE = `
WITH gone AS (
  DELETE FROM usage_ledger u
   USING unnest($1::uuid[], $2::uuid[]) AS r(id, tenant_id)
   WHERE u.tenant_id = r.tenant_id AND u.id = r.id AND u.completed_at IS NULL
  RETURNING u.id, u.tenant_id, u.reserved, u.debit, u.client_id, u.product_key, u.budget_month, u.client_budget_held, u.product_budget_held
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
),
${budgetSettlement('gone')}
SELECT id FROM gone`;

/** The key of UsageLedgerRepository's budget hints: a request's tenant, client and product key. */
const scopeOf = (r: Reservation): string => `${r.tenantId} ${r.clientId} ${r.productKey}`;

/** RESERVE's and RESERVE_BUDGETED's parameters: one array per column. */
const reserveValues = (batch: readonly Reservation[]): unknown[] => [
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
];

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
  /**
   * `tenant client product` of the requests RESERVE_BUDGETED (RESERVE_ONE_BUDGETED) last found under a
   * budget: they go to it first, not through RESERVE (RESERVE_ONE), which would refuse them, and then
   * it. A hint only: a budget set since is found by RESERVE's probe, one removed since by
   * RESERVE_BUDGETED. Bounded (the oldest entry leaves first), so many scopes cost at most one
   * statement more each.
   */
  private readonly budgetedScopes = new Set<string>();

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

  private noteBudgeted(scope: string, budgeted: boolean): void {
    if (!budgeted) {
      this.budgetedScopes.delete(scope);
      return;
    }
    if (this.budgetedScopes.size >= 10_000) this.budgetedScopes.delete(this.budgetedScopes.values().next().value!);
    this.budgetedScopes.add(scope);
  }

  /** `name`: a named prepared statement, planned once per connection; undefined: planned on every run. */
  private run(name: string | undefined, text: string, values: unknown[]): Promise<Array<{ id: string }>> {
    return queryPool<{ id: string }>(this.ds, { name, text, values });
  }

  /** For each reservation, in order: whether it was admitted (row written, credit held). */
  async reserve(batch: readonly Reservation[]): Promise<boolean[]> {
    return (await this.admit(batch)).map((o) => o === 'admitted');
  }

  /**
   * For each reservation, in order: admitted (row written, credit and budgets held), or why not.
   * Requests not known to be under a budget go through RESERVE (RESERVE_ONE for one), which admits
   * only unbudgeted ones; those it does not admit, and those known to be under a budget, through
   * RESERVE_BUDGETED (RESERVE_ONE_BUDGETED), which decides and says why. A request answered `retry`
   * there (its budget's month row was just created) is asked again, twice more at most, as only a
   * month turning between the tries asks again. Throws when nothing was reserved; when a later
   * statement fails after others of the batch were admitted, those it was for are `unavailable`.
   */
  async admit(batch: readonly Reservation[]): Promise<ReserveOutcome[]> {
    const outcomes = new Map<string, ReserveOutcome>();
    const known = new Set(batch.filter((r) => r.zeroRatedReason === null && this.budgetedScopes.has(scopeOf(r))));
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

  /** RESERVE (RESERVE_ONE, or its zero-rated form, for one): the ids admitted, none of them under a budget. */
  private async reserveUnbudgeted(batch: readonly Reservation[]): Promise<Set<string>> {
    if (batch.length === 0) return new Set();
    if (batch.length === 1) {
      const r = batch[0]!;
      const common = [r.id, r.tenantId, r.clientId, r.productKey, r.provider, r.model, r.endpoint, r.stream];
      const prices = [r.inputPer1k, r.outputPer1k, r.cachedInputPer1k];
      const caller = r.clientRequestId ?? null;
      const rows =
        r.zeroRatedReason === null
          ? await this.run('gateway_reserve_one', RESERVE_ONE, [...common, r.estimate, r.requestId, ...prices, caller])
          : await this.run('gateway_reserve_one_zero_rated', RESERVE_ONE_ZERO_RATED, [...common, r.zeroRatedReason, r.requestId, ...prices, caller]);
      return new Set(rows.map((row) => row.id));
    }
    const rows = await this.run('gateway_reserve', RESERVE, reserveValues(batch));
    return new Set(rows.map((row) => row.id));
  }

  /** RESERVE_BUDGETED (RESERVE_ONE_BUDGETED for one) for billable requests: each one's outcome, `retry` included; the hints follow. */
  private async reserveBudgeted(batch: readonly Reservation[]): Promise<Map<string, StatementOutcome>> {
    type Row = { id?: string; outcome: StatementOutcome; budgeted: boolean };
    let rows: Row[];
    if (batch.length === 1) {
      const r = batch[0]!;
      const values = [r.id, r.tenantId, r.clientId, r.productKey, r.provider, r.model, r.endpoint, r.stream, r.estimate, r.requestId, r.inputPer1k, r.outputPer1k, r.cachedInputPer1k, r.clientRequestId ?? null];
      rows = (await queryPool<Row>(this.ds, { name: 'gateway_reserve_one_budgeted', text: RESERVE_ONE_BUDGETED, values })).map((row) => ({ ...row, id: r.id }));
    } else {
      rows = await queryPool<Row>(this.ds, { name: 'gateway_reserve_budgeted', text: RESERVE_BUDGETED, values: reserveValues(batch) });
    }
    const answers = new Map(rows.map((row) => [row.id!, row]));
    const out = new Map<string, StatementOutcome>();
    for (const r of batch) {
      // Not in the answer: the credit did not cover it (or its tenant has no balance row), under no budget.
      const a = answers.get(r.id);
      this.noteBudgeted(scopeOf(r), a?.budgeted ?? false);
      out.set(r.id, a?.outcome ?? 'insufficient_credits');
    }
    return out;
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
