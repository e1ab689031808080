import { Injectable } from '@nestjs/common';
import { validationProblem } from '@flagship/problem-details';
import { USAGE_EXPORT_COLUMNS, type UsageExportRecord, UsageExportRepository } from '@flagship/ledger';
import { type ExportUsageQueryDto, USAGE_EXPORT_MAX_DAYS, type UsageExportFormat } from './usage-export.dto';
import { filterOf } from './usage.service';

/** Rows per keyset page: a page's text (about 0.5 KB a row) is all the export holds at once. */
export const USAGE_EXPORT_PAGE_ROWS = 2000;

const DAY_MS = 86_400_000;

/** What the controller sends: headers, then `body` piped with backpressure. */
export interface UsageExport {
  contentType: string;
  filename: string;
  /** The file's text, a page of rows per chunk, read from the ledger only as fast as it is consumed. */
  body: AsyncIterable<string>;
}

/**
 * A tenant's ledger rows of one range as a file for finance (CSV or JSON lines), oldest first. The
 * first page is read before anything is sent, so a refusal or an unreachable database is still a
 * problem+json; later pages are read only when the client has taken the previous ones.
 */
@Injectable()
export class UsageExportService {
  constructor(private readonly repo: UsageExportRepository) {}

  async open(tenantId: string, query: ExportUsageQueryDto, pageRows = USAGE_EXPORT_PAGE_ROWS): Promise<UsageExport> {
    const { format = 'csv', ...rest } = query;
    const filter = filterOf(rest);
    // The DTO requires both; filterOf has checked they are real instants in order.
    const from = filter.from!;
    const to = filter.to!;
    if (to.getTime() - from.getTime() > USAGE_EXPORT_MAX_DAYS * DAY_MS) {
      throw validationProblem({ to: `must be at most ${USAGE_EXPORT_MAX_DAYS} days after from` }, `An export covers at most ${USAGE_EXPORT_MAX_DAYS} days: split the range.`);
    }
    const first = await this.repo.page(tenantId, filter, pageRows);
    const repo = this.repo;
    async function* pages(): AsyncGenerator<UsageExportRecord[]> {
      let page = first;
      for (;;) {
        if (page.length > 0) yield page;
        if (page.length < pageRows) return;
        const last = page[page.length - 1];
        page = await repo.page(tenantId, filter, pageRows, { at: last.created_at!, id: last.id! });
      }
    }
    return {
      contentType: format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/jsonl; charset=utf-8',
      filename: `usage-${compact(from)}-${compact(to)}.${format}`,
      body: encode(format, pages()),
    };
  }
}

async function* encode(format: UsageExportFormat, pages: AsyncIterable<UsageExportRecord[]>): AsyncGenerator<string> {
  if (format === 'csv') yield csvLine(USAGE_EXPORT_COLUMNS);
  for await (const page of pages) {
    let text = '';
    for (const r of page) text += format === 'csv' ? csvLine(USAGE_EXPORT_COLUMNS.map((c) => r[c])) : jsonLine(r);
    yield text;
  }
}

/** 20261101T000000Z: an instant fit for a file name on every system. */
const compact = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '');

/** One CSV record (RFC 4180): cells separated by commas, ended by CRLF. */
export function csvLine(cells: ReadonlyArray<string | null>): string {
  return cells.map(csvCell).join(',') + '\r\n';
}

const NUMBER = /^-?\d+(\.\d+)?$/;
/** What a spreadsheet reads as the start of a formula (OWASP's CSV injection list). */
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One cell: null is empty; text a spreadsheet would run as a formula (a model name or product key is
 * the tenant's own text, and so are a client's request ids) gets a leading `'` so it shows as text;
 * a cell with a quote, comma or line break is quoted, its quotes doubled (RFC 4180 section 2).
 */
export function csvCell(value: string | null): string {
  if (value === null) return '';
  const text = FORMULA_START.test(value) && !NUMBER.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const NUMERIC = new Set<string>(['input_tokens', 'output_tokens', 'cached_tokens', 'input_per_1k', 'output_per_1k', 'cached_input_per_1k', 'reserved', 'debit', 'latency_ms', 'flag_version']);
const BOOLEAN = new Set<string>(['stream', 'zero_rated', 'usage_estimated', 'overrun']);

/** One JSON object per line, the columns in the CSV's order; numbers and booleans typed (credits stay far below 2^53). */
export function jsonLine(r: UsageExportRecord): string {
  const o: Record<string, string | number | boolean | null> = {};
  for (const c of USAGE_EXPORT_COLUMNS) {
    const v = r[c];
    o[c] = v === null ? null : NUMERIC.has(c) ? Number(v) : BOOLEAN.has(c) ? v === 'true' : v;
  }
  return JSON.stringify(o) + '\n';
}
