import { type CanActivate, type DynamicModule, type ExecutionContext, Injectable, Module, type Type } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import type { Request } from 'express';
import type Redis from 'ioredis';
import { commonEnv, loadConfig, portEnv } from '@flagship/config';
import { isPlan } from '@flagship/domain';
import { REDIS, whenReady } from '@flagship/redis';
import { platformModules } from '@flagship/platform';
import { setCaller, startTestApp, type RunningApp } from '@flagship/service-kit';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { RateLimitGuard } from './rate-limit.guard';
import { RequestPoliciesModule } from './request-policies.module';
import type { RequestPoliciesOptions } from './request-policies.options';

/**
 * Test scaffolding standing in for an app's authentication guard: the caller comes from
 * `x-test-caller`, `x-test-tenant` and `x-test-plan` instead of a verified token.
 */
@Injectable()
export class HeaderAuthGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    const callerId = req.header('x-test-caller');
    const tenantId = req.header('x-test-tenant');
    const plan = req.header('x-test-plan');
    if (callerId !== undefined || tenantId !== undefined) {
      setCaller(req, {
        kind: 'user',
        callerId: callerId ?? 'user:anonymous-tester',
        ...(tenantId === undefined ? {} : { tenantId }),
        ...(isPlan(plan) ? { plan } : {}),
      });
    }
    return true;
  }
}

export interface ProbeOptions {
  policies: RequestPoliciesOptions;
  controllers: Type[];
  /** TRUST_PROXY (proxy hops), so tests can speak from several client addresses via X-Forwarded-For. */
  trustProxy?: number;
}

/** A probe app registering guards and interceptor in the order an app must: auth, rate limit, idempotency. */
export function probeModule(env: NodeJS.ProcessEnv, options: ProbeOptions): DynamicModule {
  const config = loadConfig({ ...env, ...(options.trustProxy === undefined ? {} : { TRUST_PROXY: String(options.trustProxy) }) }, { ...commonEnv, ...portEnv(0) });
  @Module({
    imports: [RequestPoliciesModule.forRoot(options.policies)],
    controllers: options.controllers,
    providers: [
      { provide: APP_GUARD, useClass: HeaderAuthGuard },
      { provide: APP_GUARD, useExisting: RateLimitGuard },
      { provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor },
    ],
  })
  class PoliciesProbeModule {}
  return { module: PoliciesProbeModule, imports: platformModules(config, { serviceName: 'policies-probe' }) };
}

/**
 * The probe, returned once its Redis client is ready: the client keeps no offline queue, so a request
 * sent while it is still connecting is served as in an outage (uncounted, or 503 for an idempotent
 * write), which tests of the normal path must not see. CI's loaded cores showed both.
 */
export async function startProbe(env: NodeJS.ProcessEnv, options: ProbeOptions): Promise<RunningApp> {
  const probe = await startTestApp(probeModule(env, options));
  if (!(await whenReady(probe.app.get<Redis>(REDIS), 10000))) {
    await probe.close();
    throw new Error('the probe: its Redis client was not ready within 10 s');
  }
  return probe;
}
