import { createHash } from 'node:crypto';

/** Methods the Idempotency-Key applies to (CONTRACT.md section 4); others ignore the header. */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH']);

/** 1..255 printable ASCII characters, as Stripe accepts. */
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;

export function isValidIdempotencyKey(key: string): boolean {
  return VALID_KEY.test(key);
}

/**
 * JSON with object keys sorted at every depth, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are the same
 * request. Array order is meaningful and kept. `undefined` (no body) is the empty string.
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortKeys(v)));
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * Request headers that change what a request means: the tenant it acts in, the environment it
 * writes to, the version it expects. The same key with another value is another request (422), never
 * a replay of an answer given for another tenant or environment.
 */
export const MEANINGFUL_HEADERS = ['x-tenant-id', 'x-environment', 'if-match'] as const;

/**
 * What makes two requests "the same" for a key: method, path with query, the body's canonical form
 * and the MEANINGFUL_HEADERS. Other headers are left out on purpose: a retry may carry a new
 * request id or a refreshed auth token.
 */
export function requestFingerprint(method: string, url: string, body: unknown, headers: Record<string, string | string[] | undefined> = {}): string {
  const meaning: Record<string, string> = {};
  for (const name of MEANINGFUL_HEADERS) {
    const value = headers[name];
    if (value !== undefined) meaning[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const base = `${method.toUpperCase()} ${url} ${sha256Hex(canonicalJson(body))}`;
  return Object.keys(meaning).length === 0 ? base : `${base} ${sha256Hex(canonicalJson(meaning))}`;
}
