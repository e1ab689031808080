import type { INestApplication } from '@nestjs/common';
import { installLeanRoutes, route } from '@flagship/lean-http';
import { openAiErrorWriter } from './gateway.errors';
import type { GatewayRoute } from './dialects/dialect';
import type { GatewayHandler } from './gateway.handler';
import { GatewayPipeline } from './gateway.pipeline';

/** A proxy route: guarded by its access token before its body is read, the body handed over as text (each API words its own errors). */
const proxy = (path: string, endpoint: GatewayRoute) =>
  route({ method: 'POST', path, guard: (x, h: GatewayHandler) => h.guard(x, endpoint), handle: (x, _p, text, h: GatewayHandler) => h.completion(x, endpoint, text) });

const ROUTES = [
  proxy('/v1/chat/completions', 'chat.completions'),
  proxy('/v1/messages', 'messages'),
  proxy('/v1/responses', 'responses'),
  proxy('/v1/embeddings', 'embeddings'),
  route({ method: 'GET', path: '/v1/models', handle: (x, _p, _text, h: GatewayHandler) => h.models(x) }),
];

/**
 * bootstrapService's `configure` hook (main.ts and the tests): the proxy routes on the lean HTTP layer
 * in front of Express, with OpenAI's error body for everything under /v1 (unknown routes, wrong
 * methods, bodies refused); /healthz, /readyz and /metrics stay Nest's.
 */
export function installGateway(app: INestApplication): void {
  installLeanRoutes(app, { name: 'Gateway', target: app.get(GatewayPipeline).handler, routes: ROUTES, errors: openAiErrorWriter, ownedPrefixes: ['/v1'] });
}
