/** Anthropic's error `type` for a status (its API reference's table; 402 is its billing_error). */
export function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'overloaded_error';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** Anthropic's error body. */
export const anthropicError = (status: number, message: string, requestId?: string): string =>
  JSON.stringify({ type: 'error', error: { type: anthropicErrorType(status), message }, ...(requestId === undefined ? {} : { request_id: requestId }) });
