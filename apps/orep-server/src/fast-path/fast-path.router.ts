import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import { CommonProblems } from '@flagship/problem-details';
import type { EvaluateHandler } from '../evaluate/evaluate.handler';
import type { OfrepHandler } from '../ofrep/ofrep.handler';
import type { OrepReadiness } from '../readiness/orep-readiness';
import { ApiTokenVerifier } from './api-token';
import type { BufferedMetrics } from './buffered-metrics';
import { Exchange, readJsonBody, refuseBody } from './exchange';
import { FixedWindowRateLimiter } from './rate-limiter';

export interface FastPathOptions {
  token: string;
  /** Per client address per second; 0 = no limit. */
  rateLimitRps: number;
  /** CONTRACT.md: 1 MiB. */
  bodyLimit: number;
}

/** OFREP answers auth and rate-limit refusals with no body; the seed endpoint with problems. */
type Style = 'ofrep' | 'seed';

interface EvaluationRoute {
  /** For metrics and messages: the template, never the raw path. */
  template: string;
  style: Style;
  method: 'POST' | 'GET';
  /** `key` is the decoded flag key ('' where the path has none); `text` the body ('' for GET). */
  run: (x: Exchange, key: string, text: string) => void;
}

const OFREP_FLAGS = '/ofrep/v1/evaluate/flags';
const OFREP_FLAG_PREFIX = '/ofrep/v1/evaluate/flags/';
const SEED_PREFIX = '/v1/flags/';
const SEED_SUFFIX = '/evaluate';

/**
 * The 'request' listener of the HTTP server, in front of Express. The evaluation paths are answered
 * here, straight on node:http (Express and Nest's pipeline cost about ten times what an evaluation
 * does); every other request goes to the Express app unchanged, so health, metrics, unknown routes
 * and errors behave as in every app. What the evaluation paths keep from the platform: the request
 * id, the HTTP metrics, problem+json errors, the 1 MiB body limit and JSON-only bodies. What they
 * leave out: per-request access logs (metrics count them; errors are logged).
 */
export class FastPathRouter {
  private readonly logger = new Logger('FastPath');
  private readonly verifier: ApiTokenVerifier;
  private readonly limiter: FixedWindowRateLimiter;

  constructor(
    private readonly ofrep: OfrepHandler,
    private readonly seed: EvaluateHandler,
    private readonly readiness: OrepReadiness,
    private readonly metrics: BufferedMetrics,
    private readonly options: FastPathOptions,
    private readonly fallback: RequestListener,
  ) {
    this.verifier = new ApiTokenVerifier(options.token);
    this.limiter = new FixedWindowRateLimiter(options.rateLimitRps);
  }

  /** The evaluation endpoints, described once: no closure is built per request. */
  private readonly routes: Record<'all' | 'one' | 'seed' | 'configuration', EvaluationRoute> = {
    all: { template: OFREP_FLAGS, style: 'ofrep', method: 'POST', run: (x, _key, text) => this.ofrep.evaluateAll(x, text) },
    one: { template: '/ofrep/v1/evaluate/flags/:key', style: 'ofrep', method: 'POST', run: (x, key, text) => this.ofrep.evaluateOne(x, key, text) },
    seed: { template: '/v1/flags/:flagKey/evaluate', style: 'seed', method: 'POST', run: (x, key, text) => this.seed.evaluate(x, key, text) },
    configuration: { template: '/ofrep/v1/configuration', style: 'ofrep', method: 'GET', run: (x) => this.ofrep.configuration(x) },
  };

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path.startsWith(OFREP_FLAGS)) {
      if (path.length === OFREP_FLAGS.length) return this.evaluation(req, res, this.routes.all, '');
      const key = keyOf(path, OFREP_FLAG_PREFIX.length, path.length);
      if (path.startsWith(OFREP_FLAG_PREFIX) && key !== undefined) return this.evaluation(req, res, this.routes.one, key);
    } else if (path.startsWith(SEED_PREFIX) && path.endsWith(SEED_SUFFIX)) {
      const key = keyOf(path, SEED_PREFIX.length, path.length - SEED_SUFFIX.length);
      if (key !== undefined) return this.evaluation(req, res, this.routes.seed, key);
    } else if (path === '/ofrep/v1/configuration') {
      return this.evaluation(req, res, this.routes.configuration, '');
    } else if (path === '/readyz' && req.method === 'GET') {
      const x = new Exchange(req, res, '/readyz', this.metrics);
      this.readiness.answer(x).catch((err: unknown) => this.fail(x, err));
      return;
    } else if (path === '/metrics') {
      this.metrics.flush(); // then Express answers it, with every request so far counted
    }
    this.fallback(req, res);
  };

  private evaluation(req: IncomingMessage, res: ServerResponse, route: EvaluationRoute, key: string): void {
    const x = new Exchange(req, res, route.template, this.metrics);
    const method = route.method;
    if (req.method !== method) {
      req.resume();
      return x.problem(CommonProblems['method-not-allowed'], `${route.template} answers ${method} only.`, undefined, { allow: method });
    }
    // Before authentication, so that guessing tokens is throttled too.
    if (this.limiter.enabled) {
      const wait = this.limiter.take(req.socket.remoteAddress ?? '');
      if (wait > 0) {
        req.resume();
        const headers = { 'retry-after': String(wait) };
        return route.style === 'ofrep'
          ? x.empty(429, headers)
          : x.problem(CommonProblems['rate-limited'], `Too many requests; try again in ${wait} s.`, undefined, headers);
      }
    }
    const auth = this.verifier.check(req.headers);
    if (auth !== 'ok') {
      req.resume();
      const headers = { 'www-authenticate': 'Bearer' };
      return route.style === 'ofrep'
        ? x.empty(401, headers)
        : x.problem(
            CommonProblems.unauthorized,
            auth === 'missing' ? 'Send Authorization: Bearer <OREP_AUTH_TOKEN>.' : 'The token is not valid.',
            undefined,
            headers,
          );
    }
    if (method === 'GET') return this.defer(x, route, key, '');
    readJsonBody(req, this.options.bodyLimit, (body) => {
      if (!body.ok) return refuseBody(x, body.problem, this.options.bodyLimit);
      this.defer(x, route, key, body.text);
    });
  }

  /**
   * Requests whose bodies have been read wait here, as [exchange, route, key, body] runs, and are
   * evaluated and answered together once the event loop has read every socket that was ready
   * (setImmediate runs right after that poll). Answering each request from inside its socket's read
   * callback interleaves our code and the write path of node:http, libuv and the kernel with the read
   * path, request by request, and each of them starts cold; answering them back to back keeps every
   * one warm. Measured in tools/bench/orep.ts (64 connections, 20-rule flag): 54 to 57 µs of server
   * CPU per request answered one by one (0.56 to 0.62 of the bare node:http baseline), 27 to 37 µs
   * in batches (0.97 to 1.13). The wait this adds is the batch itself, under load far shorter than
   * the queueing it saves (p99 went from 6-13 ms to 3-7 ms), and one turn of the loop when idle.
   */
  private pending: Array<Exchange | EvaluationRoute | string> = [];
  private drainScheduled = false;

  private defer(x: Exchange, route: EvaluationRoute, key: string, text: string): void {
    this.pending.push(x, route, key, text);
    if (!this.drainScheduled) {
      this.drainScheduled = true;
      setImmediate(this.drain);
    }
  }

  private readonly drain = (): void => {
    const batch = this.pending;
    this.pending = [];
    this.drainScheduled = false;
    for (let i = 0; i < batch.length; i += 4) {
      this.run(batch[i] as Exchange, batch[i + 1] as EvaluationRoute, batch[i + 2] as string, batch[i + 3] as string);
    }
  };

  private run(x: Exchange, route: EvaluationRoute, key: string, text: string): void {
    try {
      route.run(x, key, text);
    } catch (err) {
      this.fail(x, err);
    }
  }

  /** Unexpected: logged in full, answered with nothing of it. */
  private fail(x: Exchange, err: unknown): void {
    this.logger.error({ err, requestId: x.requestId }, 'unhandled error on an evaluation path');
    if (!x.answered) {
      x.problem(CommonProblems['internal-error'], 'The server failed to answer; the error is logged under this request id.');
    }
  }
}

/** The path segment between `start` and `end`, percent-decoded; undefined when empty or not one segment. */
function keyOf(path: string, start: number, end: number): string | undefined {
  if (end <= start) return undefined;
  const raw = path.slice(start, end);
  if (raw.includes('/')) return undefined;
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
