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

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path.startsWith(OFREP_FLAGS)) {
      if (path.length === OFREP_FLAGS.length) {
        return this.evaluation(req, res, OFREP_FLAGS, 'ofrep', (x, text) => this.ofrep.evaluateAll(x, text));
      }
      const key = keyOf(path, OFREP_FLAG_PREFIX.length, path.length);
      if (path.startsWith(OFREP_FLAG_PREFIX) && key !== undefined) {
        return this.evaluation(req, res, '/ofrep/v1/evaluate/flags/:key', 'ofrep', (x, text) => this.ofrep.evaluateOne(x, key, text));
      }
    } else if (path.startsWith(SEED_PREFIX) && path.endsWith(SEED_SUFFIX)) {
      const key = keyOf(path, SEED_PREFIX.length, path.length - SEED_SUFFIX.length);
      if (key !== undefined) {
        return this.evaluation(req, res, '/v1/flags/:flagKey/evaluate', 'seed', (x, text) => this.seed.evaluate(x, key, text));
      }
    } else if (path === '/ofrep/v1/configuration') {
      return this.evaluation(req, res, path, 'ofrep', (x) => this.ofrep.configuration(x), 'GET');
    } else if (path === '/readyz' && req.method === 'GET') {
      const x = new Exchange(req, res, '/readyz', this.metrics);
      this.readiness.answer(x).catch((err: unknown) => this.fail(x, err));
      return;
    } else if (path === '/metrics') {
      this.metrics.flush(); // then Express answers it, with every request so far counted
    }
    this.fallback(req, res);
  };

  private evaluation(
    req: IncomingMessage,
    res: ServerResponse,
    route: string,
    style: Style,
    run: (x: Exchange, body: string) => void,
    method: 'POST' | 'GET' = 'POST',
  ): void {
    const x = new Exchange(req, res, route, this.metrics);
    if (req.method !== method) {
      req.resume();
      return x.problem(CommonProblems['method-not-allowed'], `${route} answers ${method} only.`, undefined, { allow: method });
    }
    // Before authentication, so that guessing tokens is throttled too.
    if (this.limiter.enabled) {
      const wait = this.limiter.take(req.socket.remoteAddress ?? '');
      if (wait > 0) {
        req.resume();
        const headers = { 'retry-after': String(wait) };
        return style === 'ofrep'
          ? x.empty(429, headers)
          : x.problem(CommonProblems['rate-limited'], `Too many requests; try again in ${wait} s.`, undefined, headers);
      }
    }
    const auth = this.verifier.check(req.headers);
    if (auth !== 'ok') {
      req.resume();
      const headers = { 'www-authenticate': 'Bearer' };
      return style === 'ofrep'
        ? x.empty(401, headers)
        : x.problem(
            CommonProblems.unauthorized,
            auth === 'missing' ? 'Send Authorization: Bearer <OREP_AUTH_TOKEN>.' : 'The token is not valid.',
            undefined,
            headers,
          );
    }
    if (method === 'GET') return this.run(x, run, '');
    readJsonBody(req, this.options.bodyLimit, (body) => {
      if (!body.ok) return refuseBody(x, body.problem, this.options.bodyLimit);
      this.run(x, run, body.text);
    });
  }

  private run(x: Exchange, run: (x: Exchange, body: string) => void, text: string): void {
    try {
      run(x, text);
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
