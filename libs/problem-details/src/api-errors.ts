import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { allProblemTypes } from './problem-types';

/** The error statuses the management API answers with; each maps to one documented meaning. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 422 | 429 | 502 | 503;

const MEANING: Record<ErrorStatus, string> = {
  400: 'Bad request: malformed or too deeply nested JSON, a forged cursor, a missing required header',
  401: 'No bearer token, or an invalid, expired or revoked one',
  403: "Not allowed: the caller's role, scopes or tenant do not permit this",
  404: 'Not found (another tenant\'s resource looks missing too)',
  409: 'Conflict: the resource exists already, a quota is reached (`quota-exceeded`, naming `quota`, `limit` and `current`), stored flags are larger than the service holds (`flag-too-large`, `flag-set-too-large`), or a request with the same Idempotency-Key is in flight',
  412: 'If-Match names a version that is no longer current',
  413: 'Request body over 1 MiB',
  415: 'Unsupported Content-Type',
  422: 'Validation failed: `errors` names each refused field; also an Idempotency-Key reused with another body',
  429: 'Rate limit exceeded; retry after `Retry-After` seconds',
  502: 'An outside service (the payment provider) refused the request',
  503: 'A dependency (Postgres, Redis, the payment provider) is unreachable; retry after `Retry-After` seconds',
};

/** What a request body can be refused for (CONTRACT.md section 4), Idempotency-Key included. */
export const BODY_ERRORS = [400, 409, 413, 415, 422] as const satisfies readonly ErrorStatus[];

const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } };

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/**
 * Documents error responses as the problem-details filter writes them: `application/problem+json`
 * bodies of the shared `Problem` schema (`ValidationProblem`, which requires `errors`, for 422).
 * On a controller it applies to every route; on a route it adds to the controller's.
 */
export function ApiErrors(...statuses: ErrorStatus[]): MethodDecorator & ClassDecorator {
  return applyDecorators(...[...new Set(statuses)].map((status) => ApiResponse({ status, ...problemResponse(status) })));
}

/** One error response as `ApiErrors` documents it. */
function problemResponse(status: ErrorStatus) {
  return {
    description: MEANING[status],
    content: { 'application/problem+json': { schema: ref(status === 422 ? 'ValidationProblem' : 'Problem') } },
    ...(status === 429 || status === 503 ? { headers: RETRY_AFTER } : {}),
  };
}

/** The same error responses as an OpenAPI `responses` object, for a route declared outside Nest's controllers. */
export function problemResponses(...statuses: ErrorStatus[]): Record<string, ReturnType<typeof problemResponse>> {
  return Object.fromEntries([...new Set(statuses)].map((status) => [String(status), problemResponse(status)]));
}

/** The components `ApiErrors` refers to; every app's document carries them. */
export function problemSchemas(): Record<string, Record<string, unknown>> {
  return {
    Problem: {
      type: 'object',
      description: `RFC 9457 problem details. Types: ${allProblemTypes().map((t) => `/problems/${t.slug} (${t.status})`).join(', ')}.`,
      required: ['type', 'title', 'status', 'detail'],
      properties: {
        type: { type: 'string', example: '/problems/validation-failed' },
        title: { type: 'string' },
        status: { type: 'integer' },
        detail: { type: 'string' },
        instance: { type: 'string', description: 'the request id (x-request-id)' },
        errors: { type: 'object', additionalProperties: { type: 'string' }, description: 'field -> message, on 422' },
      },
    },
    ValidationProblem: {
      description: 'A 422 problem: `errors` maps each refused field (a dotted path) to a message.',
      allOf: [ref('Problem'), { type: 'object', required: ['errors'], properties: { errors: { type: 'object', additionalProperties: { type: 'string' } } } }],
    },
  };
}
