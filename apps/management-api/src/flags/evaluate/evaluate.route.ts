import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { BufferedMetrics, installLeanRouter, LeanRouter } from '@flagship/lean-http';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { RateLimitService } from '@flagship/request-policies';
import { HttpMetrics } from '@flagship/service-kit';
import { AuthenticationGuard } from '../../auth/authentication.guard';
import { AuthorizationGuard } from '../../auth/authorization.guard';
import type { ManagementApiConfig } from '../../env.schema';
import { FlagsController } from '../flags.controller';
import { FlagsService } from '../flags.service';
import { FastEvaluateHandler } from './fast-evaluate.handler';
import { PrincipalCache } from './principal-cache';

/** 1 MiB, as for every app (CONTRACT.md section 4). */
const BODY_LIMIT = 1024 * 1024;

/**
 * bootstrapService's `configure` hook (main.ts and the tests): the two evaluate routes on the lean
 * HTTP layer in front of Express; every other route of management-api stays Nest's. A request the
 * lean path does not handle like Nest would (an Idempotency-Key to honour, a compressed body) goes to
 * Express as before.
 */
export function installFastEvaluate(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const metrics = new BufferedMetrics(app.get(HttpMetrics));
  const principals = new PrincipalCache([app.get(AuthenticationGuard), app.get(AuthorizationGuard)], app.get<ManagementApiConfig>(APP_CONFIG).EVALUATE_CALLER_CACHE_MS);
  principals.listen(app.get<PubSub>(PUBSUB));
  const handler = new FastEvaluateHandler(app.get(FlagsService), principals, app.get(RateLimitService), {
    byKey: { handler: FlagsController.prototype.evaluate, controller: FlagsController },
    inProject: { handler: FlagsController.prototype.evaluateInProject, controller: FlagsController },
  });
  server.once('close', () => {
    metrics.close();
    principals.close();
  });
  let express: RequestListener | undefined;
  const router = installLeanRouter(server, (fallback) => {
    express = fallback;
    return new LeanRouter({ metrics, fallback, bodyLimit: BODY_LIMIT, name: 'FastEvaluate' })
      .add({ path: '/api/flags/:flagKey/evaluate', method: 'POST', otherMethods: 'fallback', run: (x, key, text) => handler.byKey(x, key, text) })
      .add({
        path: '/api/flags/projects/:projectId/flags/:flagKey/evaluate',
        method: 'POST',
        otherMethods: 'fallback',
        run: (x, key, text, params) => handler.inProject(x, params[0]!, key, text),
      });
  });
  const toExpress = express!;
  server.removeListener('request', router.handle);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers['idempotency-key'] !== undefined || req.headers['content-encoding'] !== undefined) return toExpress(req, res);
    router.handle(req, res);
  });
}
