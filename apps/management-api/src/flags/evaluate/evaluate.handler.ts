import { TurnBatcher } from '@flagship/batching';
import type { EvaluationContext } from '@flagship/flag-evaluation';
import type { Exchange, JsonBody } from '@flagship/lean-http';
import { plainBodyAcceptor } from '@flagship/problem-details';
import { type RateLimitDecision, rateLimitExceeded, rateLimitHeaders, type RateLimitService, type RateLimitSubject } from '@flagship/request-policies';
import { type CallerContext, clientAddress } from '@flagship/service-kit';
import { EvaluateFlagDto } from '../flags.dto';
import type { EvaluateService } from './evaluate.service';
import type { PrincipalCache } from './principal-cache';
import { RateLimitAhead } from './rate-limit-ahead';

/**
 * The evaluate route's two paths (evaluate.route.ts declares them), in the order of every other
 * management-API route: the body read and parsed by the lean routes' body rules, then authentication
 * and tenant access (the guards' own TenantAccessResolver, its result cached), the tenant's rate
 * limit with its RateLimit-* headers (on the errors that follow it too), the body's validation, then
 * the evaluation from memory.
 */
export class EvaluateHandler {
  /** The rate-limit checks of one event-loop turn go to Redis in one pipeline; most answer ahead of it. */
  private readonly limiter: RateLimitAhead;

  constructor(
    private readonly flags: EvaluateService,
    private readonly principals: PrincipalCache,
    private readonly limits: RateLimitService,
  ) {
    const batch = new TurnBatcher<RateLimitSubject, RateLimitDecision | undefined>((subjects) => limits.consumeMany(subjects));
    this.limiter = new RateLimitAhead((subject) => batch.add(subject));
  }

  /** `POST /api/flags/:flagKey/evaluate`: `{ userId?, attributes?, environment? }`. */
  async byKey(x: Exchange, flagKey: string, body: JsonBody<EvaluateFlagDto>): Promise<void> {
    const principal = await this.principals.resolve(x.req);
    await this.rateLimit(x, principal.caller);
    const dto = await body.validate();
    const context: EvaluationContext = { ...(dto.attributes ?? {}) };
    if (dto.userId !== undefined) {
      context['key'] = dto.userId;
      context['userId'] = dto.userId;
    }
    const result = await this.flags.evaluate(principal.tenant.id, dto.environment ?? headerOf(x, 'x-environment'), flagKey, context);
    x.json(200, JSON.stringify(result));
  }

  /** `POST /api/flags/projects/:projectId/flags/:flagKey/evaluate`: the body is the context. */
  async inProject(x: Exchange, projectId: string, flagKey: string, body: JsonBody<EvaluationContext>): Promise<void> {
    const principal = await this.principals.resolve(x.req);
    await this.rateLimit(x, principal.caller);
    const context = await body.validate();
    const result = await this.flags.evaluate(principal.tenant.id, headerOf(x, 'x-environment'), flagKey, context, projectId);
    x.json(200, JSON.stringify(result));
  }

  /** As RateLimitGuard: the tenant's budget (see RateLimitAhead); Redis away serves uncounted and without headers. */
  private async rateLimit(x: Exchange, caller: CallerContext): Promise<void> {
    const decision = await this.limiter.decide(this.limits.subjectFor(caller, clientAddress(x.req)));
    if (decision === undefined) return;
    const { 'Retry-After': _retryAfter, ...headers } = rateLimitHeaders(decision);
    x.addHeaders(headers);
    if (!decision.allowed) throw rateLimitExceeded(decision);
  }
}

function headerOf(x: Exchange, name: string): string | undefined {
  const v = x.req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** The evaluate body as the validation pipe would hand it over, where plain checks of EvaluateFlagDto's rules decide that. */
export const plainEvaluateBody = plainBodyAcceptor(EvaluateFlagDto);
