import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';

/** What each error status of a tenant-scoped read means, in the words every operation shares. */
const MEANING: Record<number, string> = {
  400: 'a forged cursor or a malformed request',
  401: 'no or bad bearer token',
  403: 'a foreign tenant, a role too weak, or a client token where a user token is needed',
  422: 'invalid query parameters (errors names each)',
  429: 'over the tenant plan\'s rate limit (Retry-After)',
  503: 'Postgres or Redis unavailable (Retry-After)',
};

/**
 * Documents the listed error statuses with the shared RFC 9457 Problem schema. Named and called as
 * the `ApiErrors` the OpenAPI work adds to problem-details, so merging both is an import change.
 */
export function ApiErrors(...statuses: number[]): MethodDecorator {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: MEANING[status] ?? 'see the problem type',
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        ...(status === 429 || status === 503 ? { headers: { 'Retry-After': { description: 'seconds to wait before retrying', schema: { type: 'integer' } } } } : {}),
      }),
    ),
  );
}
