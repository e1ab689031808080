import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { planRollupRead, type Span } from './usage-rollup-plan';
import { toUsageRow, USAGE_ROW_COLUMNS, type UsageRow, type UsageRowRecord, type UsageStatus } from './usage-row';

/** A validated filter: instants already parsed, every field optional. */
export interface UsageFilter {
  from?: Date;
  to?: Date;
  productKey?: string;
  status?: UsageStatus;
  model?: string;
  /** The caller's own `x-request-id` the row recorded. */
  clientRequestId?: string;
}

export interface UsageGroupRow {
  /** The UTC day (midnight), when grouped per day (`perDay`). */
  day?: Date;
  product_key: string;
  model: string;
  requests: string;
  input_tokens: string;
  output_tokens: string;
  debit: string;
}

/** The UTC day a row counts in, as the daily rollups bucket it. */
const DAY_OF_ROW = `date_trunc('day', created_at, 'UTC')`;

/** The gateway's usage ledger, read for one tenant (management-api's usage routes); every statement names the tenant first. */
@Injectable()
export class UsageRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /** Up to `limit + 1` rows, newest first, after `after`: one more tells a next page exists. */
  async list(tenantId: string, filter: UsageFilter, limit: number, after?: PageCursor): Promise<UsageRow[]> {
    const { where, params } = whereOf(tenantId, filter);
    if (after) {
      params.push(after.at, after.id);
      where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(limit + 1);
    // (tenant_id, created_at DESC, id DESC) is usage_ledger_tenant_idx: the page is an index range.
    const rows: UsageRowRecord[] = await this.ds.query(
      `SELECT ${USAGE_ROW_COLUMNS} FROM usage_ledger WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map(toUsageRow);
  }

  /**
   * Counts and sums per product key and model (and UTC day, `perDay`) over every row of the filter, read from the usage
   * rollups (docs/decisions/2026-11-29-usage-rollups.md) in ONE statement, so one snapshot: whole days
   * from daily rows, whole hours from hourly rows, completions not yet compacted from their deltas,
   * and from the ledger itself the partial hours at the ends and the rows still pending. The same
   * answer as groupsOfRows (usage-rollups.int-spec.ts); a filter on the caller's request id, which
   * no rollup keeps, is answered from the rows (an index range).
   */
  groups(tenantId: string, filter: UsageFilter, perDay = false): Promise<UsageGroupRow[]> {
    if (filter.clientRequestId !== undefined) return this.groupsOfRows(tenantId, filter, perDay);
    const plan = planRollupRead(filter.from, filter.to);
    const params: unknown[] = [tenantId];
    const p = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    const dims: string[] = [];
    if (filter.productKey) dims.push(`product_key = ${p(filter.productKey)}`);
    if (filter.model) dims.push(`model = ${p(filter.model)}`);
    // Its parameter numbered only once a part uses it: Postgres cannot type a parameter no part names.
    let statusParam: string | undefined;
    const status = (): string[] => (filter.status ? [`status = ${(statusParam ??= p(filter.status))}`] : []);
    const within = (column: string, span: Span): string[] => [
      ...(span.from ? [`${column} >= ${p(span.from)}::timestamptz`] : []),
      ...(span.to ? [`${column} < ${p(span.to)}::timestamptz`] : []),
    ];
    const day = (bucket: string) => (perDay ? bucket : 'NULL::timestamptz');
    const rowsPart = (where: string[]) =>
      `SELECT ${day(DAY_OF_ROW)}, product_key, model, count(*) AS requests, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(debit) AS debit
         FROM usage_ledger WHERE ${['tenant_id = $1', ...dims, ...where].join(' AND ')} GROUP BY 1, product_key, model`;
    const rollupPart = (table: string, where: string[]) =>
      `SELECT ${day(table === 'usage_rollups_daily' ? 'day' : `date_trunc('day', hour, 'UTC')`)}, product_key, model, sum(requests), sum(input_tokens), sum(output_tokens), sum(debit)
         FROM ${table} WHERE ${['tenant_id = $1', ...dims, ...status(), ...where].join(' AND ')} GROUP BY 1, product_key, model`;
    const parts: string[] = plan.rows.map((span) => rowsPart([...status(), ...within('created_at', span)]));
    if (plan.rolled) {
      // Pending rows are in no rollup: read where they are (the pending index).
      if (filter.status === undefined || filter.status === 'pending') parts.push(rowsPart([`status = 'pending'`, ...within('created_at', plan.rolled)]));
      if (filter.status !== 'pending') {
        parts.push(rollupPart('usage_rollup_deltas', within('hour', plan.rolled)));
        for (const span of plan.hours) parts.push(rollupPart('usage_rollups_hourly', within('hour', span)));
        if (plan.days) parts.push(rollupPart('usage_rollups_daily', within('day', plan.days)));
      }
    }
    if (parts.length === 0) return Promise.resolve([]);
    return this.ds.query(
      `SELECT ${perDay ? 'day, ' : ''}product_key, model, sum(requests)::text AS requests, sum(input_tokens)::text AS input_tokens,
              sum(output_tokens)::text AS output_tokens, sum(debit)::text AS debit
         FROM (${parts.join('\n UNION ALL ')}) AS part (day, product_key, model, requests, input_tokens, output_tokens, debit)
        GROUP BY day, product_key, model ORDER BY day, product_key COLLATE "C", model COLLATE "C"`,
      params,
    );
  }

  /** groups() as a direct aggregate over the ledger's rows: its reference, and the read of a caller's request id. */
  groupsOfRows(tenantId: string, filter: UsageFilter, perDay = false): Promise<UsageGroupRow[]> {
    const { where, params } = whereOf(tenantId, filter);
    const day = perDay ? DAY_OF_ROW : 'NULL::timestamptz';
    return this.ds.query(
      `SELECT ${perDay ? `${day} AS day, ` : ''}product_key, model, count(*)::text AS requests, sum(input_tokens)::text AS input_tokens,
              sum(output_tokens)::text AS output_tokens, sum(debit)::text AS debit
         FROM usage_ledger WHERE ${where.join(' AND ')}
        GROUP BY ${day}, product_key, model ORDER BY ${day}, product_key COLLATE "C", model COLLATE "C"`,
      params,
    );
  }
}

/** The WHERE of a filter, tenant first (`$1`); shared with the export's keyset pages. */
export function whereOf(tenantId: string, f: UsageFilter): { where: string[]; params: unknown[] } {
  const where = ['tenant_id = $1'];
  const params: unknown[] = [tenantId];
  const add = (sql: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (f.from) add((p) => `created_at >= ${p}`, f.from);
  if (f.to) add((p) => `created_at < ${p}`, f.to);
  if (f.productKey) add((p) => `product_key = ${p}`, f.productKey);
  if (f.status) add((p) => `status = ${p}`, f.status);
  if (f.model) add((p) => `model = ${p}`, f.model);
  if (f.clientRequestId) add((p) => `client_request_id = ${p}`, f.clientRequestId);
  return { where, params };
}
