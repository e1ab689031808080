import { Injectable } from '@nestjs/common';
import { isUuid } from '@flagship/domain';
import { CommonProblems, ProblemException, validationProblem } from '@flagship/problem-details';
import { decodeCursor, type PageCursor } from '@flagship/service-kit';
import type { UsageFilterDto } from './usage.dto';
import { type UsageFilter, type UsageGroupRow, type UsageRow, UsageRepository } from '@flagship/ledger';

/** A ledger row as GET /api/usage shows it: the caller's own tenant left out, instants as ISO strings. */
export type UsageRowView = Omit<UsageRow, 'tenantId' | 'createdAt' | 'completedAt'> & { createdAt: string; completedAt: string | null };

export interface UsageTotals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  debit: number;
}

export interface UsageSummaryView {
  from: string | null;
  to: string | null;
  totals: UsageTotals;
  byProductAndModel: Array<UsageTotals & { productKey: string; model: string }>;
}

/** Per UTC day, product key and model, for a chart: `day` is YYYY-MM-DD. */
export interface UsageDailyView {
  from: string | null;
  to: string | null;
  days: Array<UsageTotals & { day: string; productKey: string; model: string }>;
}

/** Instants Postgres and JS both hold exactly; outside this a filter is a typo, not a query. */
const EARLIEST = Date.UTC(1970, 0, 1);
const LATEST = Date.UTC(10000, 0, 1);

export function toUsageRowView(r: UsageRow): UsageRowView {
  const { tenantId: _tenantId, createdAt, completedAt, ...rest } = r;
  return { ...rest, createdAt: createdAt.toISOString(), completedAt: completedAt?.toISOString() ?? null };
}

/** The keyset position of a listed row, for `sendPage` (created_at has millisecond precision, as ISO strings do). */
export const usageCursor = (r: UsageRowView): PageCursor => ({ at: r.createdAt, id: r.id });

/** A tenant's AI gateway usage (CONTRACT.md section 7): ledger rows and their totals for one filter. */
@Injectable()
export class UsageService {
  constructor(private readonly repo: UsageRepository) {}

  async list(tenantId: string, query: UsageFilterDto, page: { limit: number; cursor?: string }): Promise<UsageRowView[]> {
    const filter = filterOf(query);
    const after = decodeCursor(page.cursor);
    // A cursor that decodes but names no instant or row must not reach Postgres as a cast error (500).
    if (after && (!isUuid(after.id) || !inRange(Date.parse(after.at)))) {
      throw new ProblemException(CommonProblems['bad-request'], 'The cursor is not one this API issued.');
    }
    return (await this.repo.list(tenantId, filter, page.limit, after)).map(toUsageRowView);
  }

  async summary(tenantId: string, query: UsageFilterDto): Promise<UsageSummaryView> {
    const filter = filterOf(query);
    const byProductAndModel = (await this.repo.groups(tenantId, filter)).map(toGroup);
    const totals: UsageTotals = { requests: 0, inputTokens: 0, outputTokens: 0, debit: 0 };
    for (const g of byProductAndModel) {
      totals.requests += g.requests;
      totals.inputTokens += g.inputTokens;
      totals.outputTokens += g.outputTokens;
      totals.debit += g.debit;
    }
    return { from: filter.from?.toISOString() ?? null, to: filter.to?.toISOString() ?? null, totals, byProductAndModel };
  }

  /** The summary's groups per UTC day too (the console's chart), from the same rollups. */
  async daily(tenantId: string, query: UsageFilterDto): Promise<UsageDailyView> {
    const filter = filterOf(query);
    const days = (await this.repo.groups(tenantId, filter, true)).map((g) => ({ day: g.day!.toISOString().slice(0, 10), ...toGroup(g) }));
    return { from: filter.from?.toISOString() ?? null, to: filter.to?.toISOString() ?? null, days };
  }
}

const inRange = (ms: number): boolean => Number.isFinite(ms) && ms >= EARLIEST && ms < LATEST;

/** The DTO has checked each field's form; this checks what one field cannot: real instants, in order. */
export function filterOf(q: UsageFilterDto): UsageFilter {
  const errors: Record<string, string> = {};
  const instant = (name: 'from' | 'to'): Date | undefined => {
    const raw = q[name];
    if (raw === undefined) return undefined;
    const ms = Date.parse(raw);
    if (!inRange(ms) || !isCalendarDate(raw.slice(0, 10))) {
      errors[name] = 'must be a real instant between 1970 and 9999';
      return undefined;
    }
    return new Date(ms);
  };
  const from = instant('from');
  const to = instant('to');
  if (from && to && from.getTime() > to.getTime()) errors['from'] = 'must not be after to';
  if (Object.keys(errors).length > 0) throw validationProblem(errors);
  return { from, to, productKey: q.productKey, status: q.status, model: q.model, clientRequestId: q.clientRequestId };
}

/** Date.parse rolls 2026-02-30 over to March 2: a date that names no day is refused, not moved. */
function isCalendarDate(ymd: string): boolean {
  const [y, m, d] = ymd.split('-').map(Number);
  const date = new Date(Date.UTC(y, m - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
}

function toGroup(g: UsageGroupRow): UsageTotals & { productKey: string; model: string } {
  return {
    productKey: g.product_key,
    model: g.model,
    requests: Number(g.requests),
    inputTokens: Number(g.input_tokens),
    outputTokens: Number(g.output_tokens),
    debit: Number(g.debit),
  };
}
