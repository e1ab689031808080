import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { BufferedMetrics, installLeanRouter, LeanRouter } from '@flagship/lean-http';
import { problemResponses } from '@flagship/problem-details';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { RateLimitService } from '@flagship/request-policies';
import { type DeclaredRoutes, HttpMetrics } from '@flagship/service-kit';
import type { TenantAccessRule } from '../../auth/auth.decorators';
import { TenantAccessResolver } from '../../auth/tenant-access.resolver';
import type { ManagementApiConfig } from '../../env.schema';
import { EvaluateFlagDto, EvaluationResultDto } from '../flags.dto';
import { EvaluateHandler } from './evaluate.handler';
import { EvaluateService } from './evaluate.service';
import { PrincipalCache } from './principal-cache';

/** 1 MiB, as for every app (CONTRACT.md section 4). */
const BODY_LIMIT = 1024 * 1024;

/** Who may evaluate: any member (viewer and up), or a client token with `flags:evaluate`. */
export const EVALUATE_ACCESS: TenantAccessRule = { role: 'viewer', scopes: ['flags:evaluate'] };

const BY_KEY = '/api/flags/:flagKey/evaluate';
const IN_PROJECT = '/api/flags/projects/:projectId/flags/:flagKey/evaluate';

/**
 * Evaluation changes nothing, so it takes no Idempotency-Key (a key sent is ignored, as the SDK sends
 * none): a replayed answer would be an old evaluation. Its 409 is a flag or an environment's flags
 * over the size the service holds (flag-too-large, flag-set-too-large); 413 and 415 are the body's.
 */
const ERRORS = problemResponses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503);

const HEADERS = [
  { name: 'X-Environment', in: 'header', description: 'environment key, default production', required: false, schema: { type: 'string' } },
  { name: 'X-Tenant-ID', in: 'header', description: "the tenant to evaluate in (users; default: their canonical tenant); a client token's own tenant only", required: false, schema: { type: 'string' } },
] as const;
const pathParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } }) as const;
const RESULT = { description: "the flag's value for the context, and why", content: { 'application/json': { schema: { $ref: '#/components/schemas/EvaluationResultDto' } } } };

/**
 * The evaluate route's OpenAPI operations. Swagger sees only Nest controllers, and this route is
 * answered on the lean HTTP layer, so it is declared here, and `installEvaluateRoute` registers the
 * same paths: the document (openapi.ts) and the router read one declaration, and the specs driven by
 * the document (bad-input.int-spec, evaluate.int-spec) exercise the running route.
 */
export const EVALUATE_ROUTES: DeclaredRoutes = {
  models: [EvaluateFlagDto, EvaluationResultDto],
  routes: [
    {
      method: 'POST',
      path: BY_KEY,
      operation: {
        operationId: 'Flags_evaluate',
        summary: 'Evaluate a flag for a user and attributes',
        tags: ['flags'],
        security: [{ bearer: [] }],
        parameters: [...HEADERS, pathParam('flagKey')],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/EvaluateFlagDto' } } } },
        responses: { '200': RESULT, ...ERRORS },
      },
    },
    {
      method: 'POST',
      path: IN_PROJECT,
      operation: {
        operationId: 'Flags_evaluateInProject',
        summary: "Evaluate a project's flag for a context",
        tags: ['flags'],
        security: [{ bearer: [] }],
        parameters: [...HEADERS, pathParam('projectId'), pathParam('flagKey')],
        requestBody: {
          required: true,
          description: 'the evaluation context: key (or targetingKey, userId) and attributes',
          content: { 'application/json': { schema: { type: 'object', additionalProperties: true, example: { key: 'user-42', country: 'NO' } } } },
        },
        responses: { '200': RESULT, ...ERRORS },
      },
    },
  ],
};

/**
 * bootstrapService's `configure` hook (main.ts and the tests): the evaluate route, both its paths, on
 * the lean HTTP layer in front of Express; every other route of management-api stays Nest's, and
 * every other method on these paths goes to Express (which has no such route: 404).
 */
export function installEvaluateRoute(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const metrics = new BufferedMetrics(app.get(HttpMetrics));
  const config = app.get<ManagementApiConfig>(APP_CONFIG);
  const principals = new PrincipalCache(app.get(TenantAccessResolver), EVALUATE_ACCESS, config.EVALUATE_CALLER_CACHE_MS, app.get<PubSub>(PUBSUB)).start();
  const handler = new EvaluateHandler(app.get(EvaluateService), principals, app.get(RateLimitService));
  server.once('close', () => {
    metrics.close();
    principals.close();
  });
  const [byKey, inProject] = EVALUATE_ROUTES.routes;
  installLeanRouter(server, (fallback) =>
    new LeanRouter({ metrics, fallback, bodyLimit: BODY_LIMIT, name: 'Evaluate' })
      .add({ path: byKey!.path, method: 'POST', otherMethods: 'fallback', run: (x, key, text) => handler.byKey(x, key, text) })
      .add({ path: inProject!.path, method: 'POST', otherMethods: 'fallback', run: (x, key, text, params) => handler.inProject(x, params[0]!, key, text) }),
  );
}
