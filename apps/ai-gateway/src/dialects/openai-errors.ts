import type { LeanError } from '@flagship/lean-http';

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

/** OpenAI's error body `{error: {message, type, code, param}}`, so OpenAI's SDKs raise their typed errors with our `code`. */
export function openAiError(error: LeanError): string {
  const code = LAYER_CODES[error.code] ?? error.code;
  return JSON.stringify({ error: { message: error.message, type: typeFor(error.status), code, param: error.param ?? null } });
}
