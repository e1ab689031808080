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
  usageEstimated: boolean;
  errorCode: string | null;
  latencyMs: number | null;
  requestId: string | null;
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
  usage_estimated: boolean;
  error_code: string | null;
  latency_ms: number | null;
  request_id: string | null;
  created_at: Date;
  completed_at: Date | null;
}

/** The columns of a UsageRowRecord, for a SELECT on usage_ledger (unqualified). */
export const USAGE_ROW_COLUMNS = `id, tenant_id, client_id, product_key, provider, requested_provider, model, endpoint, stream, status,
  reserved::text AS reserved, debit::text AS debit, zero_rated, zero_rated_reason, input_tokens, output_tokens,
  usage_estimated, error_code, latency_ms, request_id, created_at, completed_at`;

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
    usageEstimated: r.usage_estimated,
    errorCode: r.error_code,
    latencyMs: r.latency_ms,
    requestId: r.request_id,
    createdAt: r.created_at,
    completedAt: r.completed_at,
  };
}
