import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Inject, Logger, Optional } from '@nestjs/common';
import type { Request, Response } from 'express';
import { BODY_LIMIT_BYTES, BodyRefusals } from './body-rules';
import { ProblemException, type ProblemBody } from './problem.exception';
import { CommonProblems, problemTypeForStatus } from './problem-types';
import { DEPENDENCY_OUTAGE_LISTENER, DEPENDENCY_RETRY_AFTER_S, type DependencyFailure, dependencyFailureOf, type DependencyOutageListener } from './dependency-failure';

const DEPENDENCY_NAMES: Record<string, string> = { postgres: 'The database', redis: 'Redis' };

/** The 503 for a store that cannot be reached: the client may retry the same request later. */
export function dependencyUnavailable(failure: DependencyFailure): ProblemException {
  const what = failure.dependency ? DEPENDENCY_NAMES[failure.dependency] : 'A service this request needs';
  return new ProblemException(
    CommonProblems['service-unavailable'],
    `${what} cannot be reached right now; retry in a few seconds.`,
    {},
    { 'Retry-After': String(DEPENDENCY_RETRY_AFTER_S) },
  );
}

/** Errors raised by body-parser before a handler runs; `type` says which. */
interface BodyParserError {
  type: string;
  status?: number;
  statusCode?: number;
  limit?: number;
  charset?: string;
  encoding?: string;
}

function isBodyParserError(err: unknown): err is BodyParserError {
  return typeof err === 'object' && err !== null && typeof (err as { type?: unknown }).type === 'string' &&
    typeof ((err as BodyParserError).status ?? (err as BodyParserError).statusCode) === 'number';
}

/** Turns anything thrown into a ProblemException; never leaks messages of unexpected errors. */
export function toProblem(err: unknown, req?: Pick<Request, 'method' | 'originalUrl' | 'url'>): ProblemException {
  if (err instanceof ProblemException) return err;
  if (isBodyParserError(err)) {
    switch (err.type) {
      case 'entity.too.large':
        return BodyRefusals.tooLarge(err.limit ?? BODY_LIMIT_BYTES);
      case 'entity.parse.failed':
        return BodyRefusals.malformed();
      case 'charset.unsupported':
      case 'encoding.unsupported':
        return new ProblemException(CommonProblems['unsupported-media-type'], `Unsupported ${err.type === 'charset.unsupported' ? 'charset' : 'content encoding'}.`);
      default:
        return new ProblemException(problemTypeForStatus(err.status ?? err.statusCode ?? 400), 'The request body could not be read.');
    }
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    if (status === 404 && req && /^Cannot [A-Z]+ /.test(err.message)) {
      return new ProblemException(CommonProblems['not-found'], `No route for ${req.method} ${(req.originalUrl ?? req.url).split('?')[0]}.`);
    }
    const response = err.getResponse();
    const detail =
      typeof response === 'string'
        ? response
        : typeof (response as { message?: unknown }).message === 'string'
          ? ((response as { message: string }).message)
          : err.message;
    // Terminus' readiness failure carries the per-check details: keep them as an extension.
    const extensions: Record<string, unknown> = {};
    if (typeof response === 'object' && response && 'details' in response && 'status' in response) {
      extensions['checks'] = (response as { details: unknown }).details;
    }
    return new ProblemException(problemTypeForStatus(status), status >= 500 && status !== 503 ? 'The server failed to answer.' : detail, extensions);
  }
  const failure = dependencyFailureOf(err);
  if (failure) return dependencyUnavailable(failure);
  return new ProblemException(CommonProblems['internal-error'], 'The server failed to answer; the error is logged under this request id.');
}

export function requestIdOf(req: Request): string | undefined {
  const id = (req as Request & { id?: unknown }).id;
  return typeof id === 'string' ? id : undefined;
}

/** Writes a problem as `application/problem+json`. Shared with handlers that run outside Nest. */
export function writeProblem(res: Response, problem: ProblemException, instance: string | undefined): void {
  const body: ProblemBody = problem.toBody(instance);
  for (const [k, v] of Object.entries(problem.headers)) res.setHeader(k, v);
  res.status(body.status).type('application/problem+json').send(JSON.stringify(body));
}

@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemDetails');

  constructor(@Optional() @Inject(DEPENDENCY_OUTAGE_LISTENER) private readonly outages?: DependencyOutageListener) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const problem = toProblem(exception, req);
    // An outage is logged once by the listener, not as one stack trace per request it fails.
    const failure = problem.problem.slug === 'service-unavailable' ? dependencyFailureOf(exception) : undefined;
    if (failure) this.outages?.onDependencyFailure(failure);
    if (problem.problem.status >= 500 && problem.problem.status !== 503) {
      // Unexpected: log the real error (the pino logger redacts secrets); the body says nothing of it.
      this.logger.error({ err: exception, requestId: requestIdOf(req) }, 'unhandled error');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    writeProblem(res, problem, requestIdOf(req));
  }
}
