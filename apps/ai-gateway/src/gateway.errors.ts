import type { OutgoingHttpHeaders } from 'node:http';

/** Every refusal the gateway answers (CONTRACT.md section 7's table plus OpenAI's own request errors). */
export type GatewayErrorCode =
  | 'invalid_token'
  | 'insufficient_scope'
  | 'missing_product_key'
  | 'unknown_product_key'
  | 'legacy_product_key'
  | 'unsupported_provider'
  | 'product_not_allowed'
  | 'entitlement_required'
  | 'account_paused'
  | 'provider_restricted'
  | 'insufficient_credits'
  | 'budget_exceeded'
  | 'rate_limited'
  | 'provider_unavailable'
  | 'provider_error'
  | 'provider_timeout'
  | 'invalid_request'
  | 'invalid_json'
  | 'model_not_found'
  | 'request_not_found'
  | 'service_unavailable';

/** A refusal: thrown by a pipeline step, written once by the handler in its API's error body (Dialect.error). */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly code: GatewayErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly headers: OutgoingHttpHeaders = {},
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

/** A dependency (Postgres, Redis) failed: 503 with Retry-After, never a 500. */
export const dependencyDown = (what: string): GatewayError =>
  new GatewayError(503, 'service_unavailable', `The gateway cannot reach ${what}; try again shortly.`, null, { 'retry-after': '1' });
