import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import { toProblem } from '@flagship/problem-details';
import { isInternalRequest } from '@flagship/service-kit';
import type { BufferedMetrics } from './buffered-metrics';
import { type ErrorWriter, Exchange, problemErrorWriter, readJsonBody, refuseBody } from './exchange';

export interface LeanRoute {
  /**
   * `/exact/path` or a path with `:param` segments (`/v1/flags/:key/evaluate`); the template is what
   * metrics see. Each parameter is one whole, non-empty segment.
   */
  path: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Another method: 'refuse' answers 405 (the default); 'fallback' hands the request to the fallback listener. */
  otherMethods?: 'refuse' | 'fallback';
  /**
   * Runs before the body is read (authentication, rate limits): answers and returns false to stop,
   * so a refused request costs no body reading. It may decide later (a promise: a token to verify);
   * meanwhile the body is left unread, so what the client sends waits in the socket's buffers, not
   * the heap. A rejected promise is an unexpected failure (a 500 that tells nothing).
   */
  guard?: (x: Exchange) => boolean | Promise<boolean>;
  /** 'batch' (the default): answered with the other requests of this event-loop turn; 'now': at once. */
  schedule?: 'batch' | 'now';
  /**
   * `param` is the decoded last `:param` segment ('' without one), `params` every one in path order;
   * `text` the UTF-8 body ('' for GET or none).
   */
  run: (x: Exchange, param: string, text: string, params: readonly string[]) => void | Promise<unknown>;
}

export interface LeanRouterOptions {
  metrics: BufferedMetrics;
  /** The requests no route takes: in a Nest app, Express (see installLeanRouter). */
  fallback: RequestListener;
  /** Bytes; CONTRACT.md: 1 MiB. */
  bodyLimit: number;
  errors?: ErrorWriter;
  /** Paths under these prefixes that match no route are answered 404 here, in the app's error format, not by the fallback. */
  ownedPrefixes?: readonly string[];
  /** Logger context for unexpected failures. */
  name?: string;
}

interface ParamRoute {
  prefix: string;
  suffix: string;
  route: LeanRoute;
}

/** A template with several parameters: its segments, null where a parameter goes. */
interface MultiParamRoute {
  segments: Array<string | null>;
  route: LeanRoute;
}

const NO_PARAMS: readonly string[] = [];

/**
 * The 'request' listener of an app's HTTP server, in front of Express: the hot paths are answered
 * here, straight on node:http (Express and Nest's pipeline cost about ten times what a flag
 * evaluation does), every other request goes to Express unchanged, so health, metrics, unknown
 * routes and errors behave as in every app. What the routes keep from the platform: the request id,
 * the HTTP metrics, the app's error format, the body limit and JSON-only bodies. What they leave
 * out: per-request access logs (metrics count them; errors are logged).
 */
export class LeanRouter {
  private readonly logger: Logger;
  private readonly exact = new Map<string, LeanRoute>();
  private readonly withParam: ParamRoute[] = [];
  private readonly withParams: MultiParamRoute[] = [];
  private readonly errors: ErrorWriter;
  private readonly owned: readonly string[];

  constructor(private readonly options: LeanRouterOptions) {
    this.logger = new Logger(options.name ?? 'LeanRouter');
    this.errors = options.errors ?? problemErrorWriter;
    this.owned = options.ownedPrefixes ?? [];
  }

  add(route: LeanRoute): this {
    const at = route.path.indexOf('/:');
    if (at < 0) {
      this.exact.set(route.path, route);
      return this;
    }
    if (route.path.indexOf('/:', at + 2) >= 0) {
      this.withParams.push({ segments: route.path.split('/').map((s) => (s.startsWith(':') ? null : s)), route });
      return this;
    }
    const end = route.path.indexOf('/', at + 1);
    this.withParam.push({ prefix: route.path.slice(0, at + 1), suffix: end < 0 ? '' : route.path.slice(end), route });
    return this;
  }

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const exact = this.exact.get(path);
    if (exact !== undefined) return this.dispatch(req, res, exact, '');
    for (const p of this.withParam) {
      if (path.length > p.prefix.length + p.suffix.length && path.startsWith(p.prefix) && path.endsWith(p.suffix)) {
        const param = segment(path, p.prefix.length, path.length - p.suffix.length);
        if (param !== undefined) return this.dispatch(req, res, p.route, param);
      }
    }
    if (this.withParams.length > 0) {
      const parts = path.split('/');
      for (const p of this.withParams) {
        const params = matchSegments(p.segments, parts);
        if (params !== undefined) return this.dispatch(req, res, p.route, params);
      }
    }
    // Then Express answers it (on the internal port only), with every request so far counted.
    if (path === '/metrics' && isInternalRequest(req)) this.options.metrics.flush();
    for (const prefix of this.owned) {
      if (path.startsWith(prefix)) {
        req.resume();
        const x = new Exchange(req, res, `${prefix}*`, this.options.metrics, this.errors);
        return x.error({ status: 404, code: 'not-found', message: `No route ${req.method ?? ''} ${path}.` });
      }
    }
    this.options.fallback(req, res);
  };

  private dispatch(req: IncomingMessage, res: ServerResponse, route: LeanRoute, param: string | readonly string[]): void {
    if (req.method !== route.method && route.otherMethods === 'fallback') return this.options.fallback(req, res);
    const x = new Exchange(req, res, route.path, this.options.metrics, this.errors);
    if (req.method !== route.method) {
      req.resume();
      return x.error({ status: 405, code: 'method-not-allowed', message: `${route.path} answers ${route.method} only.` }, { allow: route.method });
    }
    if (route.guard !== undefined) {
      const passed = route.guard(x);
      if (passed === false) {
        req.resume();
        return;
      }
      if (passed !== true) {
        passed.then(
          (ok) => (ok ? this.admitted(x, route, param) : req.resume()),
          (err: unknown) => {
            req.resume();
            this.fail(x, err);
          },
        );
        return;
      }
    }
    this.admitted(x, route, param);
  }

  /** A request its guard let through: its body read (but for GET and DELETE), then scheduled. */
  private admitted(x: Exchange, route: LeanRoute, param: string | readonly string[]): void {
    const req = x.req;
    if (route.method === 'GET' || route.method === 'DELETE') return this.schedule(x, route, param, '');
    const limit = this.options.bodyLimit;
    readJsonBody(req, limit, (body) => {
      if (!body.ok) return refuseBody(x, body.problem, limit);
      this.schedule(x, route, param, body.text);
    });
  }

  private schedule(x: Exchange, route: LeanRoute, param: string | readonly string[], text: string): void {
    if (route.schedule === 'now') return this.run(x, route, param, text);
    this.pending.push(x, route, param, text);
    if (!this.drainScheduled) {
      this.drainScheduled = true;
      setImmediate(this.drain);
    }
  }

  /**
   * Requests whose bodies have been read wait here, as [exchange, route, param, body] runs, and are
   * answered together once the event loop has read every socket that was ready (setImmediate runs
   * right after that poll). Answering each request from inside its socket's read callback
   * interleaves our code and the write path of node:http, libuv and the kernel with the read path,
   * request by request, and each of them starts cold; answering them back to back keeps every one
   * warm, which about halves the server's CPU per request (docs/decisions/2026-11-29-serving-loop-costs.md). The wait this adds is the batch
   * itself, under load far shorter than the queueing it saves, and one turn of the loop when idle.
   */
  private pending: Array<Exchange | LeanRoute | string | readonly string[]> = [];
  private drainScheduled = false;

  private readonly drain = (): void => {
    const batch = this.pending;
    this.pending = [];
    this.drainScheduled = false;
    for (let i = 0; i < batch.length; i += 4) {
      this.run(batch[i] as Exchange, batch[i + 1] as LeanRoute, batch[i + 2] as string | readonly string[], batch[i + 3] as string);
    }
  };

  private run(x: Exchange, route: LeanRoute, param: string | readonly string[], text: string): void {
    try {
      const done =
        typeof param === 'string' ? route.run(x, param, text, param === '' ? NO_PARAMS : [param]) : route.run(x, param[param.length - 1] ?? '', text, param);
      if (done !== undefined) done.catch((err: unknown) => this.fail(x, err));
    } catch (err) {
      this.fail(x, err);
    }
  }

  private fail(x: Exchange, err: unknown): void {
    answerFailure(x, err, this.logger);
  }
}

/**
 * Answers what a route threw or rejected with: a ProblemException in the app's error format, a
 * dependency down as 503 with Retry-After, anything else logged in full and answered with nothing of
 * it (toProblem, as Nest's filter does). A request already answering is cut.
 */
export function answerFailure(x: Exchange, err: unknown, logger: Logger): void {
  const problem = toProblem(err);
  if (problem.problem.status >= 500 && problem.problem.status !== 503) {
    logger.error({ err, requestId: x.requestId, clientRequestId: x.clientRequestId }, `unhandled error on ${x.route}`);
  }
  if (!x.answered) x.fail(problem);
  else if (!x.res.writableEnded) x.res.destroy();
}

/** The path segment between `start` and `end`, percent-decoded; undefined when empty or not one segment. */
function segment(path: string, start: number, end: number): string | undefined {
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

/** The decoded parameters when `parts` (a path split at '/') fits the template's segments. */
function matchSegments(segments: ReadonlyArray<string | null>, parts: readonly string[]): string[] | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const want = segments[i];
    const part = parts[i]!;
    if (want === null) {
      const value = segment(part, 0, part.length);
      if (value === undefined) return undefined;
      params.push(value);
    } else if (want !== part) {
      return undefined;
    }
  }
  return params;
}

/**
 * Puts a LeanRouter in front of an app's HTTP server by taking over its one 'request' listener (in a
 * Nest app, Express), which `build` receives as the fallback for every request it does not answer.
 */
export function installLeanRouter(server: Server, build: (fallback: RequestListener) => LeanRouter): LeanRouter {
  const listeners = server.listeners('request') as RequestListener[];
  const fallback = listeners[0];
  if (listeners.length !== 1 || fallback === undefined) {
    throw new Error(`expected the HTTP server to have one request listener (Express), found ${listeners.length}`);
  }
  const router = build(fallback);
  server.removeListener('request', fallback);
  server.on('request', router.handle);
  return router;
}
