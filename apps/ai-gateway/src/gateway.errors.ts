import type { OutgoingHttpHeaders } from 'node:http';
import { type ErrorWriter, JSON_TYPE } from '@flagship/lean-http';
import { anthropicError } from './dialects/anthropic-errors';

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
  | 'service_unavailable';

/** A refusal: thrown by a pipeline step, written once by the handler in OpenAI's error body. */
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

/** OpenAI's `type` per status, as its SDKs and clients read them. */
function typeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'insufficient_quota';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'invalid_request_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** The lean layer's own refusals (problem slugs) in OpenAI's vocabulary. */
const LAYER_CODES: Readonly<Record<string, string>> = {
  'not-found': 'unknown_url',
  'method-not-allowed': 'method_not_allowed',
  'payload-too-large': 'request_too_large',
  'unsupported-media-type': 'unsupported_media_type',
  'malformed-json': 'invalid_json',
  'internal-error': 'internal_error',
};

/**
 * OpenAI's error body `{error: {message, type, code, param}}` for every answer that is not a
 * success, so OpenAI's SDKs raise their typed errors with our `code`. Every answer also tells the
 * time the gateway spent (`x-gateway-overhead-ms`).
 */
export const openAiErrorWriter: ErrorWriter = (x, error, headers) => {
  // Anthropic's SDKs read Anthropic's error body: /v1/messages answers in it, the layer's own refusals too
  // (and the 404 of a route below it that the gateway does not serve, such as count_tokens).
  if (x.route === '/v1/messages' || x.req.url?.startsWith('/v1/messages/') === true) {
    return x.send(error.status, JSON_TYPE, { ...headers, 'x-gateway-overhead-ms': x.elapsedMs().toFixed(2) }, anthropicError(error.status, error.message, x.requestId));
  }
  const code = LAYER_CODES[error.code] ?? error.code;
  const body = JSON.stringify({ error: { message: error.message, type: typeFor(error.status), code, param: error.param ?? null } });
  x.send(error.status, JSON_TYPE, { ...headers, 'x-gateway-overhead-ms': x.elapsedMs().toFixed(2) }, body);
};
