import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { BufferedMetrics, installLeanRouter, LeanRouter } from '@flagship/lean-http';
import { HttpMetrics } from '@flagship/service-kit';
import { DIALECTS, gatewayErrorWriter } from './dialects/dialects';
import { GatewayPipeline } from './gateway.pipeline';

/** 1 MiB, as for every app (CONTRACT.md section 4). */
export const BODY_LIMIT = 1024 * 1024;

/**
 * bootstrapService's `configure` hook (main.ts and the tests): the proxy routes on the shared lean
 * HTTP layer in front of Express, one per API (DIALECTS), each guarded by its access token before its
 * body is read, with the API's error body for everything under /v1 (unknown routes, wrong methods,
 * bodies refused: OpenAI's but under an API's own path); /healthz, /readyz and /metrics stay Nest's.
 */
export function installGateway(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const handler = app.get(GatewayPipeline).handler;
  const metrics = new BufferedMetrics(app.get(HttpMetrics));
  server.once('close', () => metrics.close());
  installLeanRouter(server, (fallback) => {
    const router = new LeanRouter({ metrics, fallback, bodyLimit: BODY_LIMIT, errors: gatewayErrorWriter, ownedPrefixes: ['/v1'], name: 'Gateway' });
    for (const dialect of DIALECTS) {
      router.add({ path: dialect.path, method: 'POST', guard: (x) => handler.guard(x, dialect), run: (x, _p, text) => handler.completion(x, dialect, text) });
    }
    return router.add({ path: '/v1/models', method: 'GET', run: (x) => handler.models(x) });
  });
}
