import { Readable } from 'node:stream';
import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor, StreamableFile } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { from, lastValueFrom, type Observable } from 'rxjs';
import { DEPENDENCY_RETRY_AFTER_S, ProblemException, requestIdOf, toProblem } from '@flagship/problem-details';
import { RedisUnavailableError } from '@flagship/redis';
import { callerOf, type CallerContext } from '@flagship/service-kit';
import { IDEMPOTENCY_POLICY, type IdempotencyPolicy } from './idempotency.decorators';
import { IDEMPOTENT_METHODS, isValidIdempotencyKey, requestFingerprint } from './idempotency-key';
import { IdempotencyService, type StoredResponse } from './idempotency.service';
import { RequestPolicyProblems } from './request-policies.errors';

/** Response headers a replay repeats; the rest (request id, rate limits, dates) belong to the retry. */
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'last-modified', 'content-location', 'link'] as const;

/**
 * Idempotency-Key on POST and PATCH (CONTRACT.md section 4), Stripe's semantics:
 * - the first request claims the key and runs; its answer is kept 24 h;
 * - the same key and the same request (method, path, canonical body, and the headers that change
 *   meaning: X-Tenant-ID, X-Environment, If-Match) replays that answer with
 *   `Idempotent-Replayed: true`, without running the handler;
 * - the same key with another request is 422; while the first still runs, 409 with Retry-After;
 * - a 4xx the handler (or validation) answers is kept and replayed, as the same request would fail
 *   the same way; a 5xx is not: the claim is released so a retry can succeed;
 * - Redis down: a request carrying a key is refused with 503, because running it without the
 *   guarantee could apply it twice (a double charge); requests without a key are unaffected;
 * - only requests the guards authenticated are keyed (per tenant and caller), so an answer is never
 *   replayed before the request's own credentials were checked; public routes (which authenticate,
 *   if at all, in the handler: `/oauth/token`, sign-in) ignore the key, and @NoIdempotency routes too;
 * - an answer carrying a secret (@SecretResponse) is recorded without its body: a retry gets 409
 *   `idempotent-response-not-replayable` instead of the secret again, and nothing runs twice.
 *
 * Register it as a global interceptor; guards (authentication, rate limits) have run by then.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly store: IdempotencyService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const req = context.switchToHttp().getRequest<Request>();
    if (!IDEMPOTENT_METHODS.has(req.method)) return next.handle();
    const header = req.headers['idempotency-key'];
    if (header === undefined) return next.handle();
    const policy = this.reflector.getAllAndOverride<IdempotencyPolicy | undefined>(IDEMPOTENCY_POLICY, [context.getHandler(), context.getClass()]);
    if (policy === 'off') return next.handle();
    const caller = callerOf(req);
    if (!caller) return next.handle();
    const key = Array.isArray(header) ? header.join(', ') : header;
    if (!isValidIdempotencyKey(key)) {
      throw new ProblemException(
        RequestPolicyProblems['idempotency-key-invalid'],
        'Idempotency-Key must be 1 to 255 printable ASCII characters.',
      );
    }
    // from(promise): once claimed, the handler's result is recorded even if the client goes away.
    return from(this.run(req, context.switchToHttp().getResponse<Response>(), caller, key, policy === 'secret-response', next));
  }

  private async run(req: Request, res: Response, caller: CallerContext, key: string, secret: boolean, next: CallHandler): Promise<unknown> {
    const fingerprint = requestFingerprint(req.method, req.originalUrl, req.body, req.headers);
    const storeKey = this.store.storeKeyFor(caller, key);
    let claim;
    try {
      claim = await this.store.claim(storeKey, fingerprint);
    } catch (err) {
      if (!(err instanceof RedisUnavailableError)) throw err;
      throw new ProblemException(
        RequestPolicyProblems['idempotency-unavailable'],
        'Requests with an Idempotency-Key cannot be served right now; retry later with the same key, or send the request without one.',
        {},
        { 'Retry-After': String(DEPENDENCY_RETRY_AFTER_S) },
      );
    }
    if (!claim.claimed) {
      const record = claim.record;
      if (record.fingerprint !== fingerprint) {
        throw new ProblemException(
          RequestPolicyProblems['idempotency-key-reused'],
          'This Idempotency-Key was already used for a different request (method, path or body); use a new key for a new request.',
        );
      }
      if (record.state === 'in-flight') {
        throw new ProblemException(
          RequestPolicyProblems['idempotency-in-flight'],
          'A request with this Idempotency-Key is still being processed; retry shortly to receive its result.',
          {},
          { 'Retry-After': '1' },
        );
      }
      return replay(res, record.response);
    }

    const stopRenewing = this.store.keepAlive(storeKey, claim.token);
    try {
      let body: unknown;
      try {
        body = await lastValueFrom(next.handle(), { defaultValue: undefined });
      } catch (err) {
        const problem = toProblem(err, req);
        const status = problem.problem.status;
        // A refusal with Retry-After (busy, try again) is not the request's answer: a retry with the key runs it.
        if (status >= 400 && status < 500 && problem.headers['Retry-After'] === undefined) {
          await this.store.complete(storeKey, claim.token, fingerprint, {
            status,
            headers: { 'content-type': 'application/problem+json', ...problem.headers },
            body: problem.toBody(requestIdOf(req)),
          });
        } else {
          await this.store.release(storeKey, claim.token);
        }
        throw err;
      }
      const stored = res.headersSent ? undefined : storable(res, body, secret);
      if (stored) await this.store.complete(storeKey, claim.token, fingerprint, stored);
      // A handler that wrote the response itself, or a stream, cannot be replayed: let a retry run.
      else await this.store.release(storeKey, claim.token);
      return body;
    } finally {
      stopRenewing();
    }
  }
}

function replay(res: Response, response: StoredResponse): unknown {
  if (response.withheld) {
    const location = response.headers['location'];
    throw new ProblemException(
      RequestPolicyProblems['idempotent-response-not-replayable'],
      `The request with this Idempotency-Key already succeeded (${response.status}); its answer held a secret, which is shown once and never kept. ` +
        'Use the resource it created or changed (for an OAuth client: list the clients, rotate its secret with a new key).',
      { originalStatus: response.status, ...(location === undefined ? {} : { location }) },
      { 'Idempotent-Replayed': 'true', ...(location === undefined ? {} : { Location: location }) },
    );
  }
  res.status(response.status);
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  res.setHeader('Idempotent-Replayed', 'true');
  return response.body;
}

/** The answer Nest is about to send: the status @HttpCode (or the handler) set, and the body (not when it holds a secret). */
function storable(res: Response, body: unknown, secret: boolean): StoredResponse | undefined {
  if (body instanceof StreamableFile || body instanceof Readable || Buffer.isBuffer(body)) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(body);
  } catch {
    return undefined;
  }
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = res.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  if (secret) return { status: res.statusCode, headers, withheld: true };
  // Through JSON, as Nest will send it (toJSON applied), so the replay matches byte for byte.
  return { status: res.statusCode, headers, ...(json === undefined ? {} : { body: JSON.parse(json) as unknown }) };
}
