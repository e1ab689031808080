import { SetMetadata } from '@nestjs/common';

export const RATE_LIMIT_RULE = 'request-policies:rate-limit';
export const SKIP_RATE_LIMIT = 'request-policies:skip-rate-limit';

/**
 * A route's own rate-limit rule. `per: 'ip'` limits by client address whoever the caller is: for
 * sign-in, token and dev-IdP endpoints, which are reached before there is a tenant to charge.
 */
export interface RateLimitRule {
  per: 'ip';
  /** Requests per window; defaults to the module's `ipLimitPerMinute`. */
  limit?: number;
  /**
   * Routes naming the same bucket share one budget per address (default `ip`, so every sign-in,
   * token and dev-IdP route draws from the same 60 a minute). Routes sharing a bucket should share
   * the limit too.
   */
  bucket?: string;
}

export const RateLimit = (rule: RateLimitRule): MethodDecorator & ClassDecorator => SetMetadata(RATE_LIMIT_RULE, rule);

/** Serves the route without counting it or sending RateLimit-* headers (probes, metrics). */
export const SkipRateLimit = (): MethodDecorator & ClassDecorator => SetMetadata(SKIP_RATE_LIMIT, true);
