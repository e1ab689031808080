import type { OutgoingHttpHeaders } from 'node:http';
import { Logger } from '@nestjs/common';
import type { Request } from 'express';
import type { EvaluationContext } from '@flagship/flag-evaluation';
import { TurnBatcher } from '@flagship/batching';
import type { Exchange } from '@flagship/lean-http';
import { CommonProblems, findUnsafeText, ProblemException, StrictValidationPipe, toProblem } from '@flagship/problem-details';
import { type RateLimitDecision, rateLimitHeaders, type RateLimitService, type RateLimitSubject, RequestPolicyProblems } from '@flagship/request-policies';
import { type CallerContext, clientAddress, exceedsJsonDepth, MAX_JSON_DEPTH, unsafePathReason } from '@flagship/service-kit';
import { EvaluateFlagDto } from '../flags.dto';
import type { FlagsService } from '../flags.service';
import type { PrincipalCache } from './principal-cache';
import { RateLimitAhead } from './rate-limit-ahead';

/** What body-parser's strict JSON accepts at the top level (anything else is its parse failure). */
const OBJECT_OR_ARRAY = /^[\s]*[{[]/;

/**
 * The evaluate route (its two paths), on the lean HTTP layer, in the order and with the answers of
 * every other management-API route: JSON body, authentication and tenant access (the guards' own
 * TenantAccessResolver, its result cached), the tenant's rate limit with its RateLimit-* headers
 * (also on the errors that follow it), the app's strict validation pipe, then the evaluation from
 * memory; errors are the app's problem details.
 */
export class EvaluateHandler {
  private readonly logger = new Logger('Evaluate');
  private readonly pipe = new StrictValidationPipe();
  /** The rate-limit checks of one event-loop turn go to Redis in one pipeline; most answer ahead of it. */
  private readonly limiter: RateLimitAhead;

  constructor(
    private readonly flags: FlagsService,
    private readonly principals: PrincipalCache,
    private readonly limits: RateLimitService,
  ) {
    const batch = new TurnBatcher<RateLimitSubject, RateLimitDecision | undefined>((subjects) => limits.consumeMany(subjects));
    this.limiter = new RateLimitAhead((subject) => batch.add(subject));
  }

  /** `POST /api/flags/:flagKey/evaluate`: `{ userId?, attributes?, environment? }`. */
  async byKey(x: Exchange, flagKey: string, text: string): Promise<void> {
    let headers: OutgoingHttpHeaders | undefined;
    try {
      const body = parseBody(x, text);
      const principal = await this.principals.resolve(x.req);
      headers = await this.rateLimit(x, principal.caller);
      const dto = plainEvaluateBody(body) ?? ((await this.pipe.transform(body, { type: 'body', metatype: EvaluateFlagDto, data: undefined })) as EvaluateFlagDto);
      const context: EvaluationContext = { ...(dto.attributes ?? {}) };
      if (dto.userId !== undefined) {
        context['key'] = dto.userId;
        context['userId'] = dto.userId;
      }
      const result = await this.flags.evaluate(principal.tenant.id, dto.environment ?? headerOf(x, 'x-environment'), flagKey, context);
      x.json(200, JSON.stringify(result), headers);
    } catch (err) {
      this.fail(x, err, headers);
    }
  }

  /** `POST /api/flags/projects/:projectId/flags/:flagKey/evaluate`: the body is the context. */
  async inProject(x: Exchange, projectId: string, flagKey: string, text: string): Promise<void> {
    let headers: OutgoingHttpHeaders | undefined;
    try {
      const body = parseBody(x, text);
      const principal = await this.principals.resolve(x.req);
      headers = await this.rateLimit(x, principal.caller);
      const context = (await this.pipe.transform(body, { type: 'body', metatype: Object, data: undefined })) as EvaluationContext;
      const result = await this.flags.evaluate(principal.tenant.id, headerOf(x, 'x-environment'), flagKey, context, projectId);
      x.json(200, JSON.stringify(result), headers);
    } catch (err) {
      this.fail(x, err, headers);
    }
  }

  /** As RateLimitGuard: the tenant's budget (see RateLimitAhead); Redis away serves uncounted and without headers. */
  private async rateLimit(x: Exchange, caller: CallerContext): Promise<OutgoingHttpHeaders | undefined> {
    const standIn = { caller, ip: clientAddress(x.req) } as unknown as Request;
    const decision = await this.limiter.decide(this.limits.subjectOf(standIn));
    if (decision === undefined) return undefined;
    const all = rateLimitHeaders(decision);
    const { 'Retry-After': retryAfter, ...headers } = all;
    if (!decision.allowed) {
      throw new ProblemException(
        RequestPolicyProblems['rate-limited'],
        `Rate limit of ${decision.limit} requests per ${decision.windowMs === 60_000 ? 'minute' : `${decision.windowMs / 1000} s`} exceeded; try again later (in ${retryAfter} s).`,
        {},
        { 'Retry-After': retryAfter! },
      );
    }
    return headers;
  }

  private fail(x: Exchange, err: unknown, headers: OutgoingHttpHeaders | undefined): void {
    const problem = toProblem(err);
    if (problem.problem.status >= 500 && problem.problem.status !== 503) {
      this.logger.error({ err, requestId: x.requestId }, 'unhandled error');
    }
    x.problem(problem.problem, problem.detail, problem.extensions, { ...headers, ...problem.headers });
  }
}

function headerOf(x: Exchange, name: string): string | undefined {
  const v = x.req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/**
 * What the Express app does before a controller runs: an unsafe path is 400 (refuseUnsafePath), then
 * body-parser (strict): no body is undefined, JSON other than an object or array is malformed, and
 * nesting deeper than MAX_JSON_DEPTH is json-too-deep.
 */
function parseBody(x: Exchange, text: string): unknown {
  const unsafe = unsafePathReason(x.req.url ?? '/');
  if (unsafe !== undefined) throw new ProblemException(CommonProblems['bad-request'], unsafe);
  if (text === '') return undefined;
  if (text.length > MAX_JSON_DEPTH && exceedsJsonDepth(text)) {
    throw new ProblemException(CommonProblems['json-too-deep'], `The request body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels.`);
  }
  if (!OBJECT_OR_ARRAY.test(text)) throw new ProblemException(CommonProblems['malformed-json'], 'The request body is not valid JSON.');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ProblemException(CommonProblems['malformed-json'], 'The request body is not valid JSON.');
  }
}

const EVALUATE_FIELDS: ReadonlySet<string> = new Set(['userId', 'attributes', 'environment']);
/** The keys ValidationPipe strips from a body before it validates it. */
const STRIPPED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);

/**
 * The usual evaluate body (known fields of the right types, short strings, no text Postgres cannot
 * hold, no key the pipe would strip) as the strict validation pipe would hand it over, without the
 * pipe: class-transformer and class-validator cost about a tenth of an evaluation's CPU and much of
 * its garbage. Anything else is undefined, and the pipe decides (and words the 422).
 */
export function plainEvaluateBody(body: unknown): EvaluateFlagDto | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  for (const key in body) if (!EVALUATE_FIELDS.has(key)) return undefined;
  const { userId, attributes, environment } = body as Record<string, unknown>;
  // .length bounds MaxLength's count (a surrogate pair counts one there, two here).
  if (userId !== undefined && (typeof userId !== 'string' || userId.length > 512)) return undefined;
  if (environment !== undefined && (typeof environment !== 'string' || environment.length > 63)) return undefined;
  if (attributes !== undefined && (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes))) return undefined;
  if (attributes !== undefined && hasStrippedKey(attributes, 0)) return undefined;
  if (Object.keys(findUnsafeText(body)).length > 0) return undefined;
  return body as EvaluateFlagDto;
}

function hasStrippedKey(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (depth > MAX_JSON_DEPTH) return true;
  if (Array.isArray(value)) return value.some((v) => hasStrippedKey(v, depth + 1));
  for (const key in value) {
    if (STRIPPED_KEYS.has(key) || hasStrippedKey((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}
