import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { BufferedMetrics, installLeanRouter } from '@flagship/lean-http';
import { HttpMetrics } from '@flagship/service-kit';
import type { OrepServerConfig } from '../env.schema';
import { EvaluateHandler } from '../evaluate/evaluate.handler';
import { OrepKeysHolder } from '../keys/orep-keys.provider';
import { OfrepHandler } from '../ofrep/ofrep.handler';
import { OfrepPushHolder } from '../push/ofrep-push.provider';
import { OrepReadiness } from '../readiness/orep-readiness';
import { FLAG_SOURCE, type FlagSource } from '../sources/flag-source';
import { fastPathRouter } from './fast-path.router';

/** 1 MiB, as for every app (CONTRACT.md section 4). */
export const BODY_LIMIT = 1024 * 1024;

/**
 * bootstrapService's `configure` hook for orep-server (main.ts and the tests both use it): puts the
 * lean router in front of Express, which answers every request the router does not take.
 */
export function installFastPath(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const config = app.get<OrepServerConfig>(APP_CONFIG);
  const source = app.get<FlagSource>(FLAG_SOURCE);
  const metrics = new BufferedMetrics(app.get(HttpMetrics));
  server.once('close', () => metrics.close());
  const push = app.get(OfrepPushHolder).push;
  installLeanRouter(server, (express) =>
    fastPathRouter(
      new OfrepHandler(source, push),
      new EvaluateHandler(source),
      app.get(OrepReadiness),
      metrics,
      { keys: app.get(OrepKeysHolder).keys, rateLimitRps: config.OREP_RATE_LIMIT_RPS, bodyLimit: BODY_LIMIT },
      express,
      push,
    ),
  );
}
