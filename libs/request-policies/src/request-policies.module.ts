import { type DynamicModule, Module } from '@nestjs/common';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';
import { RateLimitGuard } from './rate-limit.guard';
import { RateLimitService } from './rate-limit.service';
import { REQUEST_POLICIES_OPTIONS, type RequestPoliciesOptions, resolveRequestPoliciesOptions } from './request-policies.options';

/**
 * Rate limits and Idempotency-Key. Provides the guard and the interceptor but does not register
 * them globally: their place relative to the app's authentication guard matters (they read the
 * caller it sets), so the app registers them itself, in order:
 *
 *   { provide: APP_GUARD, useExisting: AuthenticationGuard },        // sets callerOf(req)
 *   { provide: APP_GUARD, useExisting: AuthorizationGuard },         // sets tenantId and plan
 *   { provide: APP_GUARD, useExisting: RateLimitGuard },
 *   { provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor },
 *
 * Needs RedisModule (global, from platformModules) for REDIS and REDIS_KEYS.
 */
@Module({})
export class RequestPoliciesModule {
  static forRoot(options: RequestPoliciesOptions = {}): DynamicModule {
    const providers = [RateLimitService, RateLimitGuard, IdempotencyService, IdempotencyInterceptor];
    return {
      module: RequestPoliciesModule,
      // Global: a feature with a budget of its own (checkout sessions per hour) spends through the one RateLimitService.
      global: true,
      providers: [{ provide: REQUEST_POLICIES_OPTIONS, useValue: resolveRequestPoliciesOptions(options) }, ...providers],
      exports: [REQUEST_POLICIES_OPTIONS, ...providers],
    };
  }
}
