import type { HttpTransport } from '../http-transport';
import type { PageQuery, PaginateOptions, RequestOptions } from '../sdk.types';
import { paginate } from './paginate';

export type UsageStatus = 'pending' | 'succeeded' | 'failed' | 'abandoned';

/** Which ledger rows: all fields optional; `from` inclusive, `to` exclusive (ISO 8601 with a zone, or a date). */
export interface UsageFilter {
  from?: string;
  to?: string;
  productKey?: string;
  status?: UsageStatus;
  model?: string;
  /** The caller's own `x-request-id` its gateway request carried: what that request was charged. */
  clientRequestId?: string;
}

/** One AI gateway request as the ledger recorded it; credits in micro-credits. */
export interface UsageRow {
  id: string;
  clientId: string;
  productKey: string;
  provider: string;
  requestedProvider: string | null;
  model: string;
  endpoint: 'chat.completions' | 'embeddings' | 'messages' | 'responses';
  stream: boolean;
  status: UsageStatus;
  reserved: number;
  debit: number;
  zeroRated: boolean;
  zeroRatedReason: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, those the provider reported as cached; charged at cachedInputPer1k when set. */
  cachedTokens: number;
  /** Micro-credits per 1,000 tokens the row was charged at, fixed at admission; null on rows from before prices were recorded. */
  inputPer1k: number | null;
  outputPer1k: number | null;
  /** Null when the model has no cached price (cached tokens cost inputPer1k). */
  cachedInputPer1k: number | null;
  /** The provider reported no usage: the input charged at the admission estimate, the output at what was read (for a non-streamed answer never read, the output reserved). */
  usageEstimated: boolean;
  /** The debit exceeded the reservation: the provider produced more than the output limit it was told. */
  overrun: boolean;
  errorCode: string | null;
  latencyMs: number | null;
  /** The gateway's id of the request (its `x-request-id` answer header). */
  requestId: string | null;
  /** The caller's own `x-request-id` (1 to 128 of A-Z a-z 0-9 . _ : -), when it sent one. */
  clientRequestId: string | null;
  createdAt: string;
  completedAt: string | null;
}

export interface UsageTotals {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  debit: number;
}

export interface UsageSummary {
  from: string | null;
  to: string | null;
  totals: UsageTotals;
  byProductAndModel: Array<UsageTotals & { productKey: string; model: string }>;
}

/** The summary of a filter per UTC day (`YYYY-MM-DD`), product key and model; days without usage left out. */
export interface UsageDaily {
  from: string | null;
  to: string | null;
  days: Array<UsageTotals & { day: string; productKey: string; model: string }>;
}

const filterQuery = (f: UsageFilter) => ({ from: f.from, to: f.to, productKey: f.productKey, status: f.status, model: f.model, clientRequestId: f.clientRequestId });

/** `/api/usage`: the tenant's AI gateway ledger (tenant admins, user tokens only). */
export class UsageResource {
  constructor(private readonly http: HttpTransport) {}

  /** One page of rows, newest first (default 100); see listAll() for every row. */
  async list(query: UsageFilter & PageQuery = {}, options?: RequestOptions): Promise<UsageRow[]> {
    return (await this.http.request<UsageRow[]>({ method: 'GET', path: '/api/usage', query: { ...filterQuery(query), limit: query.limit, cursor: query.cursor }, options })).body;
  }

  listAll(query: UsageFilter & PaginateOptions = {}, options?: RequestOptions): AsyncGenerator<UsageRow, void, undefined> {
    return paginate<UsageRow>(this.http, '/api/usage', { ...filterQuery(query), limit: query.pageSize }, options);
  }

  /** Requests, tokens and debits of the same filter, in total and per product key and model. */
  async summary(query: UsageFilter = {}, options?: RequestOptions): Promise<UsageSummary> {
    return (await this.http.request<UsageSummary>({ method: 'GET', path: '/api/usage/summary', query: filterQuery(query), options })).body;
  }

  /** The summary of the same filter per UTC day, product key and model (what the console charts). */
  async daily(query: UsageFilter = {}, options?: RequestOptions): Promise<UsageDaily> {
    return (await this.http.request<UsageDaily>({ method: 'GET', path: '/api/usage/daily', query: filterQuery(query), options })).body;
  }
}
