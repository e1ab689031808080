import type { INestApplication } from '@nestjs/common';
import { installLeanRoutes, route } from '@flagship/lean-http';
import { DIALECTS, gatewayErrorWriter } from './dialects/dialects';
import { chatCompletions } from './dialects/pass-through';
import type { GatewayHandler } from './gateway.handler';
import { GatewayPipeline } from './gateway.pipeline';

/**
 * The proxy routes, one per API (DIALECTS), each guarded by its access token before its body is read
 * and handed its body as text (each API words its own errors), and the model list.
 */
const ROUTES = [
  ...DIALECTS.map((dialect) =>
    route({ method: 'POST', path: dialect.path, guard: (x, h: GatewayHandler) => h.guard(x, dialect), handle: (x, _p, text, h: GatewayHandler) => h.completion(x, dialect, text) }),
  ),
  route({ method: 'GET', path: '/v1/models', handle: (x, _p, _text, h: GatewayHandler) => h.models(x) }),
  route({ method: 'POST', path: '/v1/feedback', guard: (x, h: GatewayHandler) => h.guard(x, chatCompletions), handle: (x, _p, text, h: GatewayHandler) => h.feedback(x, text) }),
];

/**
 * bootstrapService's `configure` hook (main.ts and the tests): the gateway's routes on the lean HTTP
 * layer in front of Express, with the API's error body for everything under /v1 (unknown routes,
 * wrong methods, bodies refused: OpenAI's but under an API's own path); /healthz, /readyz and
 * /metrics stay Nest's.
 */
export function installGateway(app: INestApplication): void {
  installLeanRoutes(app, { name: 'Gateway', target: app.get(GatewayPipeline).handler, routes: ROUTES, errors: gatewayErrorWriter, ownedPrefixes: ['/v1'] });
}
