import { HttpStatus } from '@nestjs/common';

/**
 * The registry of problem types every app may answer with. Each feature adds its own through
 * `registerProblemTypes` in its `*.errors.ts`, so the OpenAPI document and `/problems` can list them all.
 */
export interface ProblemType {
  /** `/problems/{slug}` is the problem's `type` URI. */
  slug: string;
  status: number;
  title: string;
}

const registry = new Map<string, ProblemType>();

export function registerProblemTypes<T extends Record<string, Omit<ProblemType, 'slug'>>>(
  types: T,
): { [K in keyof T]: ProblemType } {
  const out = {} as { [K in keyof T]: ProblemType };
  for (const [slug, t] of Object.entries(types)) {
    const type: ProblemType = { slug, ...t };
    const existing = registry.get(slug);
    if (existing && (existing.status !== type.status || existing.title !== type.title)) {
      throw new Error(`problem type ${slug} registered twice with different meanings`);
    }
    registry.set(slug, type);
    (out as Record<string, ProblemType>)[slug] = type;
  }
  return out;
}

export function allProblemTypes(): ProblemType[] {
  return [...registry.values()].sort((a, b) => a.slug.localeCompare(b.slug));
}

export const problemTypeUri = (slug: string): string => `/problems/${slug}`;

/** Problems shared by every app: the HTTP layer's own vocabulary. */
export const CommonProblems = registerProblemTypes({
  'bad-request': { status: HttpStatus.BAD_REQUEST, title: 'Bad request' },
  'malformed-json': { status: HttpStatus.BAD_REQUEST, title: 'Malformed JSON body' },
  'json-too-deep': { status: HttpStatus.BAD_REQUEST, title: 'JSON body nested too deeply' },
  unauthorized: { status: HttpStatus.UNAUTHORIZED, title: 'Authentication required' },
  forbidden: { status: HttpStatus.FORBIDDEN, title: 'Forbidden' },
  'not-found': { status: HttpStatus.NOT_FOUND, title: 'Resource not found' },
  'method-not-allowed': { status: HttpStatus.METHOD_NOT_ALLOWED, title: 'Method not allowed' },
  conflict: { status: HttpStatus.CONFLICT, title: 'Resource already exists' },
  'precondition-failed': { status: HttpStatus.PRECONDITION_FAILED, title: 'Precondition failed' },
  'payload-too-large': { status: HttpStatus.PAYLOAD_TOO_LARGE, title: 'Request body too large' },
  'unsupported-media-type': { status: HttpStatus.UNSUPPORTED_MEDIA_TYPE, title: 'Unsupported media type' },
  'validation-failed': { status: HttpStatus.UNPROCESSABLE_ENTITY, title: 'Validation failed' },
  'rate-limited': { status: HttpStatus.TOO_MANY_REQUESTS, title: 'Rate limit exceeded' },
  'internal-error': { status: HttpStatus.INTERNAL_SERVER_ERROR, title: 'Internal server error' },
  'not-ready': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'Service unavailable' },
  'service-unavailable': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'A dependency is unavailable' },
});

/** Fallback slug for an HttpException that carries no problem type of its own. */
export function problemTypeForStatus(status: number): ProblemType {
  for (const t of Object.values(CommonProblems)) if (t.status === status) return t;
  return { slug: status >= 500 ? 'internal-error' : 'bad-request', status, title: status >= 500 ? 'Server error' : 'Request error' };
}
