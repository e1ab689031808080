import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { BufferedMetrics, installLeanRouter, LeanRouter } from '@flagship/lean-http';
import { HttpMetrics } from '@flagship/service-kit';
import { openAiErrorWriter } from './gateway.errors';
import { GatewayPipeline } from './gateway.pipeline';

/** 1 MiB, as for every app (CONTRACT.md section 4). */
export const BODY_LIMIT = 1024 * 1024;

/**
 * bootstrapService's `configure` hook (main.ts and the tests): the proxy routes on the shared lean
 * HTTP layer in front of Express, with OpenAI's error body for everything under /v1 (unknown routes,
 * wrong methods, bodies refused), each guarded by its access token before its body is read;
 * /healthz, /readyz and /metrics stay Nest's.
 */
export function installGateway(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const handler = app.get(GatewayPipeline).handler;
  const metrics = new BufferedMetrics(app.get(HttpMetrics));
  server.once('close', () => metrics.close());
  installLeanRouter(server, (fallback) =>
    new LeanRouter({ metrics, fallback, bodyLimit: BODY_LIMIT, errors: openAiErrorWriter, ownedPrefixes: ['/v1'], name: 'Gateway' })
      .add({ path: '/v1/chat/completions', method: 'POST', guard: (x) => handler.guard(x, 'chat.completions'), run: (x, _p, text) => handler.completion(x, 'chat.completions', text) })
      .add({ path: '/v1/messages', method: 'POST', guard: (x) => handler.guard(x, 'messages'), run: (x, _p, text) => handler.completion(x, 'messages', text) })
      .add({ path: '/v1/responses', method: 'POST', guard: (x) => handler.guard(x, 'responses'), run: (x, _p, text) => handler.completion(x, 'responses', text) })
      .add({ path: '/v1/embeddings', method: 'POST', guard: (x) => handler.guard(x, 'embeddings'), run: (x, _p, text) => handler.completion(x, 'embeddings', text) })
      .add({ path: '/v1/models', method: 'GET', run: (x) => handler.models(x) }),
  );
}
