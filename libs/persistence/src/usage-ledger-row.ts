/** The usage ledger's row states (migration 1763800200000-usage-ledger's CHECK). */
export const USAGE_STATUSES = ['pending', 'succeeded', 'failed', 'abandoned'] as const;
export type UsageStatus = (typeof USAGE_STATUSES)[number];

/**
 * One `usage_ledger` row as pg returns it (bigint credits as strings), read by management-api's
 * usage routes and by the gateway's tests alike.
 */
export interface UsageLedgerRow {
  id: string;
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
