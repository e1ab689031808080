/**
 * The reservation statements: each admits requests and writes their `pending` rows in ONE statement, so
 * credit (and budgets) are held under the balance row's lock and a balance never ends below minus one
 * request's cost, however many replicas reserve at once (docs/decisions/2026-11-29-ledger-statements.md).
 * Each admitted row comes back with its `created_at`, the partition key: the statements completing it
 * name its month (WRITTEN_BETWEEN), so Postgres plans one partition, not every month kept.
 */

/** The pending row's columns, the same for every reservation statement. */
const INSERT_PENDING =
  'INSERT INTO usage_ledger (id, tenant_id, client_id, product_key, provider, requested_provider, model, endpoint, stream, status, reserved, zero_rated, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, budget_month, client_budget_held, product_budget_held, client_request_id, flag_key, flag_version, variation, context_kind, route_reason)';

/** The UTC calendar month a reservation made now counts in (budget_months.month). */
const THIS_MONTH = `date_trunc('month', now() AT TIME ZONE 'UTC')::date`;

/**
 * The batch statements' first CTEs: the requests (`$1`..`$20` as arrays, in order: `ord`) and their
 * billable tenants' balance rows, locked in tenant id order so two replicas never deadlock.
 */
const BATCH_AND_BALANCES = `req AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::bigint[], $10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::int[], $18::text[], $19::text[], $20::text[])
    WITH ORDINALITY AS r(id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_request_id, flag_key, flag_version, variation, context_kind, route_reason, ord)
),
bal AS (
  SELECT c.tenant_id, c.balance - c.reserved AS available
    FROM credit_balances c
   WHERE c.tenant_id IN (SELECT tenant_id FROM req WHERE zero_rated_reason IS NULL)
   ORDER BY c.tenant_id
     FOR UPDATE
)`;

/**
 * A batch of requests none of whose budgets is set (the NOT EXISTS probe): a request is admitted while
 * its tenant's available credit, less the estimates admitted before it in the batch, covers its
 * estimate; zero-rated ones always. A billable request it does not admit goes to RESERVE_BUDGETED.
 * Why two statements: the budget CTEs cost every batch, and most tenants have no budget.
 */
export const RESERVE = `
WITH ${BATCH_AND_BALANCES},
billable AS (
  SELECT r.*, bal.available - COALESCE(sum(r.estimate) OVER (PARTITION BY r.tenant_id ORDER BY r.ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS left_before
    FROM req r JOIN bal ON bal.tenant_id = r.tenant_id
   WHERE r.zero_rated_reason IS NULL
     AND NOT EXISTS (SELECT 1 FROM budgets g WHERE g.tenant_id = r.tenant_id AND (g.scope_kind, g.scope_id) IN (('client', r.client_id), ('product', r.product_key)))
),
admitted AS (
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_request_id, flag_key, flag_version, variation, context_kind, route_reason FROM billable WHERE left_before >= GREATEST(estimate, 1)
  UNION ALL
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, 0, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_request_id, flag_key, flag_version, variation, context_kind, route_reason FROM req WHERE zero_rated_reason IS NOT NULL
),
held AS (
  UPDATE credit_balances c SET reserved = c.reserved + s.total, updated_at = now()
    FROM (SELECT tenant_id, sum(estimate) AS total FROM admitted WHERE zero_rated_reason IS NULL GROUP BY tenant_id) s
   WHERE c.tenant_id = s.tenant_id
)
${INSERT_PENDING}
SELECT id, tenant_id, client_id, product_key, provider, provider, model, endpoint, stream, 'pending', estimate, zero_rated_reason IS NOT NULL, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, NULL::date, false, false, client_request_id, flag_key, flag_version, variation, context_kind, route_reason
  FROM admitted
RETURNING id, created_at`;

/**
 * The same admission with budgets: month rows (budget_months) locked after the balances, in (tenant,
 * kind, scope) order; `BudgetsRepository.set` only inserts a missing one holding no balance lock, so no
 * lock cycle. A budget whose month row is missing (a month's first request) has it created here
 * (`born`) and the request answered `retry`: a row made by another transaction is invisible to this
 * statement's snapshot. Rows: each request's outcome and whether a budget applied (none: no credit).
 */
export const RESERVE_BUDGETED = `
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
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, estimate, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, client_limited, product_limited, client_request_id, flag_key, flag_version, variation, context_kind, route_reason
    FROM judged WHERE outcome = 'admitted'
  UNION ALL
  SELECT id, tenant_id, client_id, product_key, provider, model, endpoint, stream, 0, zero_rated_reason, request_id, input_per_1k, output_per_1k, cached_input_per_1k, false, false, client_request_id, flag_key, flag_version, variation, context_kind, route_reason
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
         CASE WHEN client_limited OR product_limited THEN ${THIS_MONTH} END, client_limited, product_limited, client_request_id, flag_key, flag_version, variation, context_kind, route_reason
    FROM admitted
  RETURNING id, created_at
)
SELECT w.id, 'admitted' AS outcome, a.client_limited OR a.product_limited AS budgeted, w.created_at FROM written w JOIN admitted a ON a.id = w.id
UNION ALL
SELECT id, outcome, client_limited OR product_limited, NULL::timestamptz FROM judged WHERE outcome <> 'admitted'`;

/**
 * RESERVE for a batch of one billable request (the usual case at low rates): the same admission and
 * row without the batch's unnest, windows and CTEs.
 */
export const RESERVE_ONE = `
WITH held AS (
  UPDATE credit_balances SET reserved = reserved + $9::bigint, updated_at = now()
   WHERE tenant_id = $2::uuid AND balance - reserved >= GREATEST($9::bigint, 1)
     AND NOT EXISTS (SELECT 1 FROM budgets WHERE tenant_id = $2::uuid AND (scope_kind, scope_id) IN (('client', $3), ('product', $4)))
  RETURNING tenant_id
)
${INSERT_PENDING}
SELECT $1::uuid, $2::uuid, $3, $4, $5, $5, $6, $7, $8::bool, 'pending', $9::bigint, false, NULL, $10, $11::bigint, $12::bigint, $13::bigint, NULL, false, false, $14::text, $15::text, $16::int, $17::text, $18::text, $19::text FROM held
RETURNING id, created_at`;

/**
 * RESERVE_BUDGETED for one billable request: with no budget set it takes `plain` (RESERVE_ONE's own
 * UPDATE) and every other CTE is gated on `lim` by a one-time filter; with one, the budgeted branch.
 */
export const RESERVE_ONE_BUDGETED = `
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
         EXISTS (SELECT 1 FROM lim WHERE scope_kind = 'client'), EXISTS (SELECT 1 FROM lim WHERE scope_kind = 'product'), $14::text, $15::text, $16::int, $17::text, $18::text, $19::text
    FROM (SELECT tenant_id FROM plain UNION ALL SELECT tenant_id FROM held) h
  RETURNING id, created_at
)
SELECT 'admitted' AS outcome, EXISTS (SELECT 1 FROM lim) AS budgeted, created_at FROM written
UNION ALL
SELECT outcome, true, NULL::timestamptz FROM verdict WHERE outcome <> 'admitted'`;

/**
 * What one flag variation's requests on one product key used this UTC month (micro-credits): the
 * debits of its completed rows and the estimates its pending rows hold (usage_ledger_flag_idx).
 */
export const VARIATION_MONTH_USED = `
SELECT COALESCE(sum(CASE WHEN status = 'pending' THEN reserved ELSE debit END), 0)::text AS used
  FROM usage_ledger
 WHERE tenant_id = $1::uuid AND flag_key = $3 AND variation = $4 AND product_key = $2
   AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;
