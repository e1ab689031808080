import type { DynamicModule, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { type NextFunction, raw, type Request, type Response } from 'express';
import { BODY_LIMIT_BYTES, CommonProblems, JSON_MEDIA_TYPES, MAX_JSON_DEPTH, ProblemException, refuseDeepJson, toProblem } from '@flagship/problem-details';
import { APP_CONFIG } from '@flagship/config';
import { stopTracing } from '@flagship/tracing';
import type { RequestListener, Server } from 'node:http';
import { markTrustedHops } from './client-address';
import { startInternalListener } from './internal-port';
import { HttpMetrics } from './metrics';
import { assignRequestId } from './request-id';

export interface BootstrapOptions {
  port: number;
  host: string;
  /** After SIGTERM, in-flight requests get this long before the process exits anyway. */
  shutdownGraceMs?: number;
  /** Largest accepted body in bytes; default BODY_LIMIT_BYTES (CONTRACT.md section 4: 1 MiB). */
  bodyLimit?: number;
  /** Routes whose handler gets the body as the raw bytes received (a Buffer), e.g. a webhook verifying a signature. */
  rawBodyPaths?: string[];
  /** Called before listen: OpenAPI, app-specific middleware... */
  configure?: (app: NestExpressApplication) => void | Promise<void>;
  /** Tests handle their own shutdown. */
  handleSignals?: boolean;
  /** Proxy hops whose X-Forwarded-For is believed; default the app config's TRUST_PROXY, else 0. */
  trustProxy?: number;
  /**
   * The internal port of /metrics and the detailed /readyz; default the app config's METRICS_PORT
   * (unset: no internal listener, and /metrics is served nowhere). 0 takes a free port (tests).
   */
  metricsPort?: number;
}

/** The settings of libs/config's commonEnv that bootstrap reads from the app's validated config, when it has one. */
function platformSettings(app: NestExpressApplication): { TRUST_PROXY?: number; METRICS_PORT?: number | false } {
  try {
    return app.get<{ TRUST_PROXY?: number; METRICS_PORT?: number | false }>(APP_CONFIG, { strict: false }) ?? {};
  } catch {
    return {};
  }
}

/**
 * Notes the trusted hop count on every request before anything reads it (Express routes and the
 * lean-http fast paths alike read the client address through clientAddress). Wraps the server's one
 * request listener once the app has installed its own (a LeanRouter); nothing is added at 0.
 */
function trustProxyHops(server: Server, hops: number): void {
  if (hops === 0) return;
  const listeners = server.listeners('request') as RequestListener[];
  const inner = listeners[0];
  if (listeners.length !== 1 || inner === undefined) throw new Error(`expected one request listener, found ${listeners.length}`);
  server.removeListener('request', inner);
  server.on('request', (req, res) => {
    markTrustedHops(req, hops);
    inner(req, res);
  });
}

/**
 * Creates and starts one app the way every app starts: request ids first, metrics, body limits,
 * problem details for everything (including body-parser errors and unknown routes), graceful stop.
 */
export async function bootstrapService(module: Type | DynamicModule, options: BootstrapOptions): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(module, {
    bufferLogs: true,
    bodyParser: false,
    abortOnError: false,
  });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  const settings = platformSettings(app);
  const hops = options.trustProxy ?? settings.TRUST_PROXY ?? 0;
  // Express's req.ip, req.ips and req.protocol; clientAddress gives the lean routes the same answer.
  app.set('trust proxy', hops);
  app.use((req: Parameters<typeof assignRequestId>[0], res: Parameters<typeof assignRequestId>[1], next: () => void) => {
    assignRequestId(req, res);
    next();
  });
  app.use(app.get(HttpMetrics).middleware());
  app.use(refuseUnsafePath);
  const limit = options.bodyLimit ?? BODY_LIMIT_BYTES;
  // body-parser's raw(): the exact bytes as a Buffer in req.body, whatever the content type (for a
  // signature over them). Before the JSON and form parsers, which then skip these routes (body read).
  for (const path of options.rawBodyPaths ?? []) app.use(path, raw({ type: () => true, limit }));
  // body-parser's hook between reading and parsing: JSON nested too deeply is refused unparsed.
  const verify = (_req: unknown, _res: unknown, raw: Buffer): void => {
    if (raw.length > MAX_JSON_DEPTH) refuseDeepJson(raw.toString('utf8'));
  };
  app.useBodyParser('json', { limit, type: JSON_MEDIA_TYPES, verify });
  app.useBodyParser('urlencoded', { limit, extended: false });
  // Name body-parser's failures (malformed JSON, too large, bad charset) here, before Nest folds
  // them into a generic 400.
  app.use((err: unknown, req: Request, _res: unknown, next: (err?: unknown) => void) => next(toProblem(err, req)));
  await options.configure?.(app);
  trustProxyHops(app.getHttpServer() as Server, hops);
  if (options.handleSignals ?? true) installGracefulShutdown(app, options.shutdownGraceMs ?? 10000);
  await app.listen(options.port, options.host);
  const metricsPort = options.metricsPort ?? settings.METRICS_PORT;
  if (metricsPort === undefined || metricsPort === false) {
    app.get(Logger).log('METRICS_PORT is not set: /metrics and the detailed /readyz are not served');
  } else {
    await startInternalListener(app, app.getHttpServer() as Server, metricsPort, options.host);
  }
  return app;
}

const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * Why a request path names no resource, or undefined when it may: its percent-decoded form holds a
 * control character (`/api/flags/%00`; Postgres refuses NUL) or it does not decode. Shared by the
 * Express middleware below and routes answered on the lean HTTP layer.
 */
export function unsafePathReason(url: string): string | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (!path.includes('%')) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return 'The request path holds an invalid percent-encoding.';
  }
  return CONTROL_CHARACTER.test(decoded) ? 'The request path holds a control character.' : undefined;
}

/** 400 for an unsafe path (unsafePathReason), before any guard, handler or query sees it. */
export function refuseUnsafePath(req: Request, _res: Response, next: NextFunction): void {
  const reason = unsafePathReason(req.url ?? '/');
  next(reason === undefined ? undefined : new ProblemException(CommonProblems['bad-request'], reason));
}

/**
 * SIGTERM/SIGINT: stop accepting, let in-flight requests finish (Nest closes the server, then runs
 * every onApplicationShutdown hook, which close the pools), and exit. A stuck request cannot hold
 * the process past the grace period.
 */
function installGracefulShutdown(app: NestExpressApplication, graceMs: number): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    app.get(Logger).log(`${signal} received: draining`);
    setTimeout(() => process.exit(1), graceMs).unref();
    app
      .close()
      // The spans still batched go to the collector before the process ends (nothing when tracing is off).
      .then(() => stopTracing().catch(() => undefined))
      .then(() => process.exit(0))
      .catch(() => process.exit(1));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
