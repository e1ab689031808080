/**
 * The rollup side of a completion (docs/decisions/2026-11-29-usage-rollups.md), as a CTE over `rows`
 * (ledger rows a statement just completed, with their key columns, tokens, debit and error code as
 * they now are): one delta per UTC hour of creation and key, appended in the completing statement's
 * own transaction. An INSERT of new rows only: no rollup row is locked, so no two settlements of one
 * tenant and hour wait for each other, and none deadlocks with the balance locks. A row still pending
 * (none of the callers passes one) is left out: pending rows are read from the ledger itself.
 */
export function rollupDeltas(rows: string): string {
  return `rolled_up AS (
  INSERT INTO usage_rollup_deltas (tenant_id, hour, product_key, client_id, model, provider, endpoint, status, requests, input_tokens, output_tokens, cached_tokens, debit, errors)
  SELECT tenant_id, date_trunc('hour', created_at, 'UTC'), product_key, client_id, model, provider, endpoint, status,
         count(*), sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(debit), count(error_code)
    FROM ${rows} WHERE status <> 'pending'
   GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
)`;
}

/** The columns `rollupDeltas` reads of a completed row, for a RETURNING (unqualified names on `alias`). */
export const rollupColumns = (alias: string): string =>
  ['created_at', 'model', 'provider', 'endpoint', 'status', 'input_tokens', 'output_tokens', 'cached_tokens', 'error_code'].map((c) => `${alias}.${c}`).join(', ');
