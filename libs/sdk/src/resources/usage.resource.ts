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

/** A difference treatment minus control with its 95% interval and the method that made it. */
export interface ExperimentDifference {
  estimate: number;
  lower: number;
  upper: number;
  method: 'newcombe-hybrid-score' | 'welch-t' | 'maritz-jarrett' | string;
}

export interface ExperimentQuantiles {
  n: number;
  p50: number | null;
  p95: number | null;
}

/** One variation of a bound flag in an experiment report; credits in micro-credits. */
export interface ExperimentVariation {
  /** What the ledger recorded; null: the route default (the binding could not be evaluated). */
  recorded: string | null;
  variationId: string | null;
  name: string;
  control: boolean;
  requests: number;
  errors: number;
  errorRate: number | null;
  errorsByCode: Record<string, number>;
  inputTokens: number;
  outputTokens: number;
  debit: number;
  costPerRequest: number | null;
  latencyMs: ExperimentQuantiles;
  timeToFirstTokenMs: ExperimentQuantiles;
  feedback: { n: number; mean: number | null };
  vsControl?: {
    errorRate?: ExperimentDifference;
    costPerRequest?: ExperimentDifference;
    latencyP95Ms?: ExperimentDifference;
    timeToFirstTokenP95Ms?: ExperimentDifference;
    feedback?: ExperimentDifference;
  };
}

/** `GET /api/usage/experiments/{flagKey}`: per variation, the differences against the control, warnings while samples are small, and a series for charts. */
export interface ExperimentReport {
  flagKey: string;
  productKey: string | null;
  from: string;
  to: string;
  controlVariationId: string | null;
  minimums: { requests: number; latencies: number; feedback: number };
  /** The gateway routes bound to this flag; those with a rollout plan have a rollout view (`rollouts.get`). */
  bindings: Array<{ productKey: string; modelAlias: string | null; rolloutPlan: boolean }>;
  variations: ExperimentVariation[];
  warnings: string[];
  series: { bucketSeconds: number; points: Array<{ at: string; variationId: string | null; recorded: string | null; requests: number; errors: number; debit: number; latencyP95Ms: number | null }> };
}

/** The report's range (default the last 7 days, at most 92) and optionally one product key. */
export type ExperimentQuery = Pick<UsageFilter, 'from' | 'to' | 'productKey'>;

/** `GET /api/usage/export`: the filter with both ends required, at most 366 days apart. */
export interface UsageExportQuery extends UsageFilter {
  from: string;
  to: string;
  /** csv (default): RFC 4180 with a header row; jsonl: one JSON object per line. */
  format?: 'csv' | 'jsonl';
}

/** A usage export as it arrives: read `body` as a stream (it can be far larger than memory should hold). */
export interface UsageExportFile {
  /** From Content-Disposition, e.g. `usage-20261101T000000Z-20261201T000000Z.csv`. */
  filename: string;
  contentType: string;
  body: ReadableStream<Uint8Array>;
}

const EXPORT_TYPES = { csv: 'text/csv', jsonl: 'application/jsonl' } as const;

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

  /** The experiment report of a flag bound to a gateway route: per variation, with intervals against the control. */
  async experiment(flagKey: string, query: ExperimentQuery = {}, options?: RequestOptions): Promise<ExperimentReport> {
    return (await this.http.request<ExperimentReport>({ method: 'GET', path: `/api/usage/experiments/${encodeURIComponent(flagKey)}`, query: { from: query.from, to: query.to, productKey: query.productKey }, options })).body;
  }

  /**
   * The rows of a range as a file (CSV by default), oldest first, streamed: resolves once the server
   * has accepted the request (a bad range throws the 422 ApiError), with the body still unread. Not
   * retried once it started: a download that breaks mid-way rejects the body's read, and a new call
   * starts it again. `options.signal` cancels the download too.
   */
  async export(query: UsageExportQuery, options?: RequestOptions): Promise<UsageExportFile> {
    const format = query.format ?? 'csv';
    const response = await this.http.openDownload('/api/usage/export', [EXPORT_TYPES[format]], { ...filterQuery(query), format }, options);
    const disposition = response.headers.get('content-disposition') ?? '';
    return {
      filename: /filename="([^"]+)"/.exec(disposition)?.[1] ?? `usage.${format}`,
      contentType: response.headers.get('content-type') ?? EXPORT_TYPES[format],
      body: response.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() }),
    };
  }

  /** The summary of the same filter per UTC day, product key and model (what the console charts). */
  async daily(query: UsageFilter = {}, options?: RequestOptions): Promise<UsageDaily> {
    return (await this.http.request<UsageDaily>({ method: 'GET', path: '/api/usage/daily', query: filterQuery(query), options })).body;
  }
}
