/** The usage ledger's row states (migration 1763800200000-usage-ledger's CHECK). */
export const USAGE_STATUSES = ['pending', 'succeeded', 'failed', 'abandoned'] as const;
export type UsageStatus = (typeof USAGE_STATUSES)[number];

/**
 * One `usage_ledger` row: the one shape every reader of the ledger gets (management-api's usage
 * routes, the meter). Micro-credits are numbers: they stay far below 2^53 (9 billion credits).
 */
export interface UsageRow {
  id: string;
  tenantId: string;
  clientId: string;
  productKey: string;
  provider: string;
  requestedProvider: string | null;
  model: string;
  endpoint: string;
  stream: boolean;
  status: UsageStatus;
  reserved: number;
  debit: number;
  zeroRated: boolean;
  zeroRatedReason: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, those the provider reported as cached (`prompt_tokens_details.cached_tokens`). */
  cachedTokens: number;
  /**
   * The prices the row was charged at, in micro-credits per 1,000 tokens, fixed when the request was
   * admitted; null on rows written before prices were recorded. `cachedInputPer1k` is null when the
   * model has no cached price (cached tokens were then charged at `inputPer1k`).
   */
  inputPer1k: number | null;
  outputPer1k: number | null;
  cachedInputPer1k: number | null;
  usageEstimated: boolean;
  /** The settlement debited more than was reserved (a provider ignored the output limit): see SETTLE. */
  overrun: boolean;
  errorCode: string | null;
  latencyMs: number | null;
  requestId: string | null;
  /** The caller's own `x-request-id` (1 to 128 of A-Z a-z 0-9 . _ : -), when it sent one. */
  clientRequestId: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

/** A row as pg returns USAGE_ROW_COLUMNS (bigint credits as strings); only toUsageRow reads it. */
export interface UsageRowRecord {
  id: string;
  tenant_id: string;
  client_id: string;
  product_key: string;
  provider: string;
  requested_provider: string | null;
  model: string;
  endpoint: string;
  stream: boolean;
  status: UsageStatus;
  reserved: string;
  debit: string;
  zero_rated: boolean;
  zero_rated_reason: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  input_per_1k: string | null;
  output_per_1k: string | null;
  cached_input_per_1k: string | null;
  usage_estimated: boolean;
  overrun: boolean;
  error_code: string | null;
  latency_ms: number | null;
  request_id: string | null;
  client_request_id: string | null;
  created_at: Date;
  completed_at: Date | null;
}

/** The columns of a UsageRowRecord, for a SELECT on usage_ledger (unqualified). */
export const USAGE_ROW_COLUMNS = `id, tenant_id, client_id, product_key, provider, requested_provider, model, endpoint, stream, status,
  reserved::text AS reserved, debit::text AS debit, zero_rated, zero_rated_reason, input_tokens, output_tokens,
  cached_tokens, input_per_1k::text AS input_per_1k, output_per_1k::text AS output_per_1k, cached_input_per_1k::text AS cached_input_per_1k,
  usage_estimated, overrun, error_code, latency_ms, request_id, client_request_id, created_at, completed_at`;

const priceOf = (v: string | null): number | null => (v === null ? null : Number(v));

/** The one mapping from a pg record to a UsageRow. */
export function toUsageRow(r: UsageRowRecord): UsageRow {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    clientId: r.client_id,
    productKey: r.product_key,
    provider: r.provider,
    requestedProvider: r.requested_provider,
    model: r.model,
    endpoint: r.endpoint,
    stream: r.stream,
    status: r.status,
    reserved: Number(r.reserved),
    debit: Number(r.debit),
    zeroRated: r.zero_rated,
    zeroRatedReason: r.zero_rated_reason,
    inputTokens: r.input_tokens,
    outputTokens: r.output_tokens,
    cachedTokens: r.cached_tokens,
    inputPer1k: priceOf(r.input_per_1k),
    outputPer1k: priceOf(r.output_per_1k),
    cachedInputPer1k: priceOf(r.cached_input_per_1k),
    usageEstimated: r.usage_estimated,
    overrun: r.overrun,
    errorCode: r.error_code,
    latencyMs: r.latency_ms,
    requestId: r.request_id,
    clientRequestId: r.client_request_id,
    createdAt: r.created_at,
    completedAt: r.completed_at,
  };
}
