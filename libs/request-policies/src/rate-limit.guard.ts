import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { ProblemException } from '@flagship/problem-details';
import { RATE_LIMIT_RULE, type RateLimitRule, SKIP_RATE_LIMIT } from './rate-limit.decorator';
import { type RateLimitDecision, rateLimitHeaders, RateLimitService } from './rate-limit.service';
import { UNLIMITED_PATHS } from './rate-limit.subject';
import { RequestPolicyProblems } from './request-policies.errors';

/**
 * Charges each request to its budget and refuses it with 429 once the budget is spent. Register it
 * as a global guard AFTER the guards that set callerOf(req) with its tenantId and plan.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly limits: RateLimitService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<Request>();
    const res = context.switchToHttp().getResponse<Response>();
    // Express routes /healthz/ to /healthz too.
    if (UNLIMITED_PATHS.has(req.path.length > 1 ? req.path.replace(/\/$/, '') : req.path)) return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean | undefined>(SKIP_RATE_LIMIT, targets)) return true;
    const rule = this.reflector.getAllAndOverride<RateLimitRule | undefined>(RATE_LIMIT_RULE, targets);
    const decision = await this.limits.consume(this.limits.subjectOf(req, rule));
    // Redis down: served uncounted, and without headers rather than with invented numbers.
    if (!decision) return true;
    const headers = rateLimitHeaders(decision);
    // Set now, before the handler, so an error thrown later still answers with them.
    for (const [name, value] of Object.entries(headers)) if (name !== 'Retry-After') res.setHeader(name, value);
    if (!decision.allowed) throw rateLimitExceeded(decision);
    return true;
  }
}

/** The 429 of a request over its budget, its Retry-After among its headers (shared with the lean routes). */
export function rateLimitExceeded(decision: RateLimitDecision): ProblemException {
  const retryAfter = rateLimitHeaders(decision)['Retry-After'] ?? '1';
  return new ProblemException(
    RequestPolicyProblems['rate-limited'],
    `Rate limit of ${decision.limit} requests per ${describeWindow(decision.windowMs)} exceeded; try again later (in ${retryAfter} s).`,
    {},
    { 'Retry-After': retryAfter },
  );
}

function describeWindow(ms: number): string {
  if (ms === 60_000) return 'minute';
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
