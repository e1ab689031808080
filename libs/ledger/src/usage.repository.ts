import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
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
  product_key: string;
  model: string;
  requests: string;
  input_tokens: string;
  output_tokens: string;
  debit: string;
}

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

  /** Counts and sums per product key and model over every row of the filter. */
  groups(tenantId: string, filter: UsageFilter): Promise<UsageGroupRow[]> {
    const { where, params } = whereOf(tenantId, filter);
    return this.ds.query(
      `SELECT product_key, model, count(*)::text AS requests, sum(input_tokens)::text AS input_tokens,
              sum(output_tokens)::text AS output_tokens, sum(debit)::text AS debit
         FROM usage_ledger WHERE ${where.join(' AND ')}
        GROUP BY product_key, model ORDER BY product_key COLLATE "C", model COLLATE "C"`,
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
