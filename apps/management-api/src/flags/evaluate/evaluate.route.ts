import type { INestApplication } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import type { EvaluationContext } from '@flagship/flag-evaluation';
import { declaredRoutes, installLeanRoutes, jsonBody, route } from '@flagship/lean-http';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { RateLimitService } from '@flagship/request-policies';
import type { TenantAccessRule } from '../../auth/auth.decorators';
import { TenantAccessResolver } from '../../auth/tenant-access.resolver';
import type { ManagementApiConfig } from '../../env.schema';
import { EvaluateFlagDto, EvaluationResultDto } from '../flags.dto';
import { EvaluateHandler } from './evaluate.handler';
import { EvaluateService } from './evaluate.service';
import { PrincipalCache } from './principal-cache';

/** Who may evaluate: any member (viewer and up), or a client token with `flags:evaluate`. */
export const EVALUATE_ACCESS: TenantAccessRule = { role: 'viewer', scopes: ['flags:evaluate'] };

const HEADERS = [
  { name: 'X-Environment', description: 'environment key, default production' },
  { name: 'X-Tenant-ID', description: "the tenant to evaluate in (users; default: their canonical tenant); a client token's own tenant only" },
];
const ANSWER = { status: 200, description: "the flag's value for the context, and why", dto: EvaluationResultDto };

/**
 * Evaluation changes nothing, so it takes no Idempotency-Key (a key sent is ignored, as the SDK sends
 * none): a replayed answer would be an old evaluation. Its 409 is a flag or an environment's flags
 * over the size the service holds (flag-too-large, flag-set-too-large). The body's problems (400,
 * 413, 415, 422) and the bearer token's (401, 403) come with the declaration.
 */
const PROBLEMS = [404, 409, 429, 503] as const;

/**
 * The evaluate route, both its paths, declared once: answered on the lean HTTP layer (every other
 * method on these paths goes to Express, which has no such route: 404), and documented from the same
 * objects (openapi.ts), so the specs driven by the document (bad-input.int-spec, evaluate.int-spec)
 * exercise the running route.
 */
const EVALUATE_BY_KEY = route({
  method: 'POST',
  path: '/api/flags/:flagKey/evaluate',
  otherMethods: 'fallback',
  auth: 'bearer',
  body: jsonBody({ dto: EvaluateFlagDto }),
  handle: (x, p, body, h: EvaluateHandler) => h.byKey(x, p['flagKey']!, body),
  problems: PROBLEMS,
  doc: { operationId: 'Flags_evaluate', summary: 'Evaluate a flag for a user and attributes', tags: ['flags'], headers: HEADERS, answer: ANSWER },
});

const EVALUATE_IN_PROJECT = route({
  method: 'POST',
  path: '/api/flags/projects/:projectId/flags/:flagKey/evaluate',
  otherMethods: 'fallback',
  auth: 'bearer',
  body: jsonBody<EvaluationContext>({
    schema: { type: 'object', additionalProperties: true, example: { key: 'user-42', country: 'NO' } },
    description:
      'the evaluation context, a LaunchDarkly context: `{kind?, key (or targetingKey, userId), ...attributes}` (no kind: `user`) or `{kind: "multi", <kind>: {key, ...}, ...}`. ' +
      'A malformed one (an invalid kind, `multi` inside multi, a kind without key) is a 400 `invalid-context` naming the field; no kind and no key evaluates to ERROR / USER_NOT_SPECIFIED as before kinds.',
  }),
  handle: (x, p, body, h: EvaluateHandler) => h.inProject(x, p['projectId']!, p['flagKey']!, body),
  problems: PROBLEMS,
  doc: { operationId: 'Flags_evaluateInProject', summary: "Evaluate a project's flag for a context", tags: ['flags'], headers: HEADERS, answer: ANSWER },
});

const ROUTES = [EVALUATE_BY_KEY, EVALUATE_IN_PROJECT];

/** The evaluate route's OpenAPI operations and the DTOs they name, for the management-API document. */
export const EVALUATE_ROUTES = declaredRoutes(ROUTES);

/** bootstrapService's `configure` hook (main.ts and the tests): the evaluate route in front of Express. */
export function installEvaluateRoute(app: INestApplication): void {
  const config = app.get<ManagementApiConfig>(APP_CONFIG);
  const principals = new PrincipalCache(app.get(TenantAccessResolver), EVALUATE_ACCESS, config.EVALUATE_CALLER_CACHE_MS, app.get<PubSub>(PUBSUB)).start();
  installLeanRoutes(app, {
    name: 'Evaluate',
    target: new EvaluateHandler(app.get(EvaluateService), principals, app.get(RateLimitService)),
    routes: ROUTES,
    refuseUnsafePaths: true,
    onClose: () => principals.close(),
  });
}
