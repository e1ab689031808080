import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, queryPool } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { type UsageFilter, whereOf } from './usage.repository';

/**
 * One ledger row as the export writes it: every value already text (or null), in EXPORT_COLUMNS'
 * order, so the writer formats nothing and a bigint never passes through a JS number.
 */
export type UsageExportRecord = Record<(typeof USAGE_EXPORT_COLUMNS)[number], string | null>;

/** The export's columns, as named in its header row: the ledger's columns a finance team reads. */
export const USAGE_EXPORT_COLUMNS = [
  'id',
  'created_at',
  'completed_at',
  'client_id',
  'product_key',
  'provider',
  'requested_provider',
  'model',
  'endpoint',
  'stream',
  'status',
  'input_tokens',
  'output_tokens',
  'cached_tokens',
  'input_per_1k',
  'output_per_1k',
  'cached_input_per_1k',
  'reserved',
  'debit',
  'zero_rated',
  'zero_rated_reason',
  'usage_estimated',
  'overrun',
  'error_code',
  'latency_ms',
  'request_id',
  'client_request_id',
  'flag_key',
  'flag_version',
  'variation',
] as const;

// Instants as ISO 8601 UTC with milliseconds (the keyset compares at that precision, as the list does);
// everything else cast to text in SQL.
const SELECT = USAGE_EXPORT_COLUMNS.map((c) =>
  c === 'created_at' || c === 'completed_at' ? `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${c}` : `${c}::text AS ${c}`,
).join(', ');

/**
 * The usage export's reads: keyset pages of a tenant's ledger, oldest first. Each page is its own
 * autocommit statement on the ledger's pool, so an export that a slow client reads for minutes holds
 * no connection and no snapshot between pages (a cursor in one transaction would hold both).
 */
@Injectable()
export class UsageExportRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /** Up to `limit` rows of the filter after `after`, in (created_at, id) order; the tenant is `$1` of every statement. */
  page(tenantId: string, filter: UsageFilter, limit: number, after?: PageCursor): Promise<UsageExportRecord[]> {
    const { where, params } = whereOf(tenantId, filter);
    if (after) {
      params.push(after.at, after.id);
      where.push(`(created_at, id) > ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(limit);
    // usage_ledger_tenant_idx (tenant_id, created_at DESC, id DESC) read backwards: each page is an index range.
    // ORDER BY names the table's columns: a bare created_at would be the text of the SELECT list, sorted
    // in full on every page (correct, since the text sorts as the instant, but a second per page at 200k rows).
    return queryPool<UsageExportRecord>(this.ds, {
      text: `SELECT ${SELECT} FROM usage_ledger WHERE ${where.join(' AND ')} ORDER BY usage_ledger.created_at, usage_ledger.id LIMIT $${params.length}`,
      values: params,
    });
  }
}
