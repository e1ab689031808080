import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { ProblemException } from '@flagship/problem-details';
import { REDIS_KEYS, type RedisKeys } from '@flagship/redis';
import { RateLimitService, RequestPolicyProblems } from '@flagship/request-policies';
import type { ManagementApiConfig } from '../env.schema';

const HOUR_MS = 3_600_000;

/**
 * Checkout and portal sessions one tenant may start per hour (CHECKOUT_SESSIONS_PER_HOUR), counted
 * by the API's own sliding-window limiter in Redis, so every replica spends from one budget. Each
 * session is a Stripe object made for the tenant: without a bound, a free tenant could make Stripe
 * rate-limit the whole account. Redis down: served uncounted, like every rate limit here.
 */
@Injectable()
export class CheckoutLimit {
  private readonly limit: number;

  constructor(
    @Inject(RateLimitService) private readonly limiter: Pick<RateLimitService, 'consume'>,
    @Inject(REDIS_KEYS) private readonly keys: Pick<RedisKeys, 'tenant'>,
    @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'CHECKOUT_SESSIONS_PER_HOUR'>,
  ) {
    this.limit = config.CHECKOUT_SESSIONS_PER_HOUR;
  }

  /** Spends one of the tenant's sessions this hour; 429 rate-limited with Retry-After when none is left. */
  async admit(tenantId: string): Promise<void> {
    const decision = await this.limiter.consume({ key: this.keys.tenant(tenantId, 'rl', 'checkout-sessions'), limit: this.limit, windowMs: HOUR_MS });
    if (!decision || decision.allowed) return;
    const retryAfter = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
    throw new ProblemException(
      RequestPolicyProblems['rate-limited'],
      `This tenant has started ${this.limit} checkout sessions in the last hour, the most it may; try again in ${retryAfter} s.`,
      { limit: this.limit, window: 'hour' },
      { 'Retry-After': retryAfter },
    );
  }
}
