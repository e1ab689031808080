import { RECORDED_CROSSINGS } from '../low-balance.repository';
import { budgetSettlement, LOW_BALANCE_CROSSINGS, writtenBetween } from './completion.sql';
import { rollupColumns, rollupDeltas } from './rollup.sql';

/**
 * Completes a batch of rows still pending (one the reconciler marked `abandoned` is left alone),
 * releases their reservations and debits their cost in ONE statement, balances locked in tenant id
 * order as the reservations lock them. "Still pending" is `completed_at IS NULL` (the same thing by the
 * usage_ledger_completed_iff_settled check) so each row is looked up by its primary key, not through
 * the pending index with its dead entries. A debit above the reservation is kept and marked `overrun`.
 * Each completed row's sums go to the usage rollups' deltas in the same statement (rollupDeltas).
 * Rows: one per completed ledger row (`id`) and one per low-balance crossing recorded (`crossing`).
 */
export const SETTLE = `
WITH s AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::int[], $6::bigint[], $7::text[], $8::int[], $9::bool[], $10::text[], $11::int[], $14::int[])
    AS s(id, tenant_id, status, input_tokens, output_tokens, debit, provider, latency_ms, usage_estimated, error_code, cached_tokens, first_token_ms)
),
done AS (
  UPDATE usage_ledger u
     SET status = s.status, input_tokens = s.input_tokens, output_tokens = s.output_tokens, cached_tokens = s.cached_tokens,
         debit = CASE WHEN u.zero_rated THEN 0 ELSE s.debit END,
         overrun = NOT u.zero_rated AND s.debit > u.reserved,
         provider = s.provider, latency_ms = s.latency_ms, usage_estimated = s.usage_estimated, error_code = s.error_code,
         first_token_ms = s.first_token_ms, completed_at = now()
    FROM s
   WHERE u.tenant_id = s.tenant_id AND u.id = s.id AND u.completed_at IS NULL AND ${writtenBetween(12, 13)}
  RETURNING u.id, u.tenant_id, u.reserved, u.debit, u.client_id, u.product_key, u.budget_month, u.client_budget_held, u.product_budget_held, ${rollupColumns('u')}
),
${rollupDeltas('done')},
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
 * Takes back reservations whose requests were refused after all (the rate limit said 429, or Redis was
 * down): their pending rows are deleted, as though never written, and their estimates leave `reserved`
 * (and their budgets'). A row no longer pending is left alone.
 */
export const RELEASE = `
WITH gone AS (
  DELETE FROM usage_ledger u
   USING unnest($1::uuid[], $2::uuid[]) AS r(id, tenant_id)
   WHERE u.tenant_id = r.tenant_id AND u.id = r.id AND u.completed_at IS NULL AND ${writtenBetween(3, 4)}
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
