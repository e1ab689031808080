import { TurnBatcher } from '@flagship/batching';
import { checkEvaluationContext, type EvaluationContext, USER_KIND } from '@flagship/flag-evaluation';
import type { Exchange, JsonBody } from '@flagship/lean-http';
import { plainBodyAcceptor, ProblemException } from '@flagship/problem-details';
import { type RateLimitDecision, rateLimitExceeded, rateLimitHeaders, type RateLimitService, type RateLimitSubject } from '@flagship/request-policies';
import { type CallerContext, clientAddress } from '@flagship/service-kit';
import { EvaluateFlagDto } from '../flags.dto';
import { FlagProblems } from '../flags.errors';
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

  /** `POST /api/flags/:flagKey/evaluate`: `{ userId?, attributes?, context?, environment? }`. */
  async byKey(x: Exchange, flagKey: string, body: JsonBody<EvaluateFlagDto>): Promise<void> {
    const principal = await this.principals.resolve(x.req);
    await this.rateLimit(x, principal.caller);
    const dto = await body.validate();
    const context = contextOfEvaluateBody(dto);
    const result = await this.flags.evaluate(principal.tenant.id, dto.environment ?? headerOf(x, 'x-environment'), flagKey, context);
    x.json(200, JSON.stringify(result));
  }

  /** `POST /api/flags/projects/:projectId/flags/:flagKey/evaluate`: the body is the context. */
  async inProject(x: Exchange, projectId: string, flagKey: string, body: JsonBody<EvaluationContext>): Promise<void> {
    const principal = await this.principals.resolve(x.req);
    await this.rateLimit(x, principal.caller);
    const context = await body.validate();
    refuseMalformedContext(context);
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

/**
 * The context of the evaluate body. `context` is a LaunchDarkly context, checked whole (400 naming
 * the field). Otherwise the seed's body: `userId` and `attributes` are a user, always: an attribute
 * named `kind` cannot make it another kind, since a seed caller sending `kind: "admin"` meant an
 * attribute, not a context kind. It is overridden by `kind: "user"` (LaunchDarkly's built-in `kind`
 * cannot hold an attribute's value), and no key is still ERROR / USER_NOT_SPECIFIED, as in the seed.
 */
export function contextOfEvaluateBody(dto: EvaluateFlagDto): EvaluationContext {
  if (dto.context !== undefined) {
    if (dto.userId !== undefined || dto.attributes !== undefined) {
      throw invalidContext({ context: 'send either context or userId and attributes, not both' });
    }
    const problem = checkEvaluationContext(dto.context);
    if (problem !== undefined) throw invalidContext({ [problem.path === '' ? 'context' : `context.${problem.path}`]: problem.message });
    return dto.context;
  }
  const context: EvaluationContext = { ...(dto.attributes ?? {}), kind: USER_KIND };
  if (dto.userId !== undefined) {
    context['key'] = dto.userId;
    context['userId'] = dto.userId;
  }
  return context;
}

/**
 * The project route's body is the context itself, so its `kind` selects the kind (CONTRACT.md
 * section 5). A malformed one is a 400 naming the field, but a body with no kind and no key is the
 * seed's context without a key: evaluated, ERROR / USER_NOT_SPECIFIED, as before kinds.
 */
export function refuseMalformedContext(context: EvaluationContext): void {
  const problem = checkEvaluationContext(context);
  if (problem === undefined || (problem.path === 'key' && (context['kind'] === undefined || context['kind'] === null))) return;
  throw invalidContext({ [problem.path === '' ? 'body' : problem.path]: problem.message });
}

function invalidContext(errors: Record<string, string>): ProblemException {
  const [field, message] = Object.entries(errors)[0]!;
  return new ProblemException(FlagProblems['invalid-context'], `The evaluation context is malformed: ${field} ${message}.`, { errors });
}

function headerOf(x: Exchange, name: string): string | undefined {
  const v = x.req.headers[name];
  return typeof v === 'string' ? v : undefined;
}

/** The evaluate body as the validation pipe would hand it over, where plain checks of EvaluateFlagDto's rules decide that. */
export const plainEvaluateBody = plainBodyAcceptor(EvaluateFlagDto);
