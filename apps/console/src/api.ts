// The console's only way to the server: management-api's public REST API on the same origin.

// The API's resource types are the SDK's (libs/sdk), so the console and the SDK cannot drift apart:
// any context kind on clauses, targets and rollouts, and segmentMatch, as CONTRACT.md section 10 says.
import type { Flag, FlagType, JsonValue } from '@flagship/sdk';
export type {
  Clause,
  ClauseOperator,
  Environment,
  EvaluationResult,
  Flag,
  FlagAuditEntry,
  FlagType,
  FlagVariation,
  JsonValue,
  Prerequisite,
  Rollout,
  Rule,
  Segment,
  SegmentRule,
  SegmentTarget,
  Target,
} from '@flagship/sdk';

/** LaunchDarkly's rule for a context kind: letters, digits, `.`, `_`, `-`; `kind` and `multi` are not kinds. */
export const CONTEXT_KIND_PATTERN = /^[a-zA-Z0-9._-]+$/;
export const USER_KIND = 'user';
/** Why `kind` cannot name a context kind, or null when it can. */
export function contextKindProblem(kind: string): string | null {
  if (kind === '') return 'Enter a context kind.';
  if (!CONTEXT_KIND_PATTERN.test(kind)) return 'A context kind has only letters, digits, ".", "_" and "-".';
  if (kind === 'kind' || kind === 'multi') return `"${kind}" is not a context kind.`;
  return null;
}

export const FLAG_TYPES: readonly FlagType[] = ['boolean', 'string', 'number', 'json'];
export interface TenantRef { tenant_id: string; tenant_name: string; role: string }
export interface Bootstrap {
  data: { user: { uid: string; email: string }; tenants: TenantRef[]; active_tenant_id: string; active_tenant_role: string };
}

/** An RFC 9457 problem from the API, with what the console shows: title, detail and the request id to quote. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string | undefined,
    readonly requestId: string | undefined,
    readonly retryAfterSeconds: number | undefined,
    readonly fieldErrors: Record<string, string> = {},
    /** The problem's other members (a 409 segment-in-use names its `flags` and `segments`). */
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(detail ? `${title}: ${detail}` : title);
  }
}

export interface RequestScope { token?: string; tenantId?: string; environment?: string }

export interface ApiResponse<T> { body: T; etag: string | null; headers?: Headers }

/** The session's token, tenant and environment as the API reads them. */
function scopeHeaders(scope: RequestScope): Record<string, string> {
  const h: Record<string, string> = {};
  if (scope.token) h['Authorization'] = `Bearer ${scope.token}`;
  if (scope.tenantId) h['X-Tenant-ID'] = scope.tenantId;
  if (scope.environment) h['X-Environment'] = scope.environment;
  return h;
}

export async function request<T>(method: string, path: string, scope: RequestScope, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
  const h: Record<string, string> = { Accept: 'application/json', ...scopeHeaders(scope), ...headers };
  if (body !== undefined) h['Content-Type'] = 'application/json';
  let res: Response;
  try {
    // Never the browser's HTTP cache: one URL answers per tenant and environment (headers the API's
    // responses do not Vary on), so a cached GET revalidated by ETag could come back as another's.
    res = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'The server cannot be reached', 'Check your connection and try again.', undefined, undefined);
  }
  const text = await res.text();
  let parsed: unknown = undefined;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (!res.ok) throw toApiError(res, parsed);
  return { body: parsed as T, etag: res.headers.get('ETag'), headers: res.headers };
}

/**
 * Downloads a file the API sends as an attachment (the usage export): fetched with the session's
 * token (a plain link could not carry it), handed to the browser as a download under the name its
 * Content-Disposition gives. A refusal is the ApiError `request` throws.
 */
export async function downloadFile(path: string, scope: RequestScope, accept: string): Promise<{ filename: string; bytes: number }> {
  const h: Record<string, string> = { Accept: `${accept}, application/problem+json`, ...scopeHeaders(scope) };
  let res: Response;
  try {
    res = await fetch(path, { method: 'GET', headers: h, credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'The server cannot be reached', 'Check your connection and try again.', undefined, undefined);
  }
  if (!res.ok) {
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    throw toApiError(res, parsed);
  }
  const filename = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? 'download';
  // A Blob, not a string: the browser may keep a large one on disk. A broken download rejects here.
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return { filename, bytes: blob.size };
}

function toApiError(res: Response, parsed: unknown): ApiError {
  const p = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const retry = Number(res.headers.get('Retry-After'));
  const errors = typeof p['errors'] === 'object' && p['errors'] !== null ? (p['errors'] as Record<string, string>) : {};
  return new ApiError(
    res.status,
    str(p['title']) ?? res.statusText ?? `HTTP ${res.status}`,
    str(p['detail']),
    str(p['instance']) ?? res.headers.get('X-Request-Id') ?? undefined,
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
    errors,
    p,
  );
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;

/** The flag's ETag as GET sends it: the list carries the same version, so a row's switch needs no extra read. */
export const etagOfFlag = (f: Pick<Flag, 'version'>): string => `"${f.version}"`;

export function formatValue(v: JsonValue | null | undefined): string {
  return v === undefined ? '—' : JSON.stringify(v);
}

/** The next page's path of a paginated list (`Link: <...>; rel="next"`, CONTRACT.md section 4), same origin only. */
export function nextPageOf(headers: Headers | undefined): string | undefined {
  const link = headers?.get('Link');
  const m = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link) : null;
  if (!m?.[1]) return undefined;
  const url = new URL(m[1], 'http://same-origin.invalid');
  return `${url.pathname}${url.search}`;
}

/** Every page of a list, following rel="next" up to `maxItems`. */
export async function requestAll<T>(path: string, scope: RequestScope, maxItems = 50_000): Promise<T[]> {
  const all: T[] = [];
  let next: string | undefined = path;
  while (next && all.length < maxItems) {
    const page: ApiResponse<T[]> = await request<T[]>('GET', next, scope);
    all.push(...page.body);
    next = nextPageOf(page.headers);
  }
  return all;
}
