import type { INestApplication } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { installLeanRoutes } from '@flagship/lean-http';
import type { OrepServerConfig } from '../env.schema';
import { EvaluateHandler } from '../evaluate/evaluate.handler';
import { OrepKeysHolder } from '../keys/orep-keys.holder';
import { OfrepHandler } from '../ofrep/ofrep.handler';
import { OfrepPushHolder } from '../push/ofrep-push.holder';
import { OrepReadiness } from '../readiness/orep-readiness';
import { FLAG_SOURCE, type FlagSource } from '../sources/flag-source';
import { FastPath, fastPathRoutes } from './fast-path.router';

/**
 * bootstrapService's `configure` hook for orep-server (main.ts and the tests both use it): orep's
 * routes on the lean HTTP layer in front of Express, which answers every request they do not take.
 */
export function installFastPath(app: INestApplication): void {
  const config = app.get<OrepServerConfig>(APP_CONFIG);
  const source = app.get<FlagSource>(FLAG_SOURCE);
  const push = app.get(OfrepPushHolder).push;
  const fastPath = new FastPath(new OfrepHandler(source, push), new EvaluateHandler(source), app.get(OrepReadiness), { keys: app.get(OrepKeysHolder).keys, rateLimitRps: config.OREP_RATE_LIMIT_RPS }, push);
  installLeanRoutes(app, { name: 'FastPath', target: fastPath, routes: fastPathRoutes(fastPath) });
}
