import type { Plan } from '@flagship/domain';
import type { IncomingMessage } from 'node:http';
import { type CallerContext, clientAddress as addressOf } from '@flagship/service-kit';
import type { RedisKeys } from '@flagship/redis';
import type { RateLimitRule } from './rate-limit.decorator';
import type { ResolvedRequestPoliciesOptions } from './request-policies.options';

/** Who is charged for a request, under which Redis key, and how much they may spend per window. */
export interface RateLimitSubject {
  kind: 'tenant' | 'caller' | 'ip';
  /** Tenant id, caller id or client address. */
  id: string;
  key: string;
  limit: number;
}

/**
 * Probes and metrics are served by service-kit's controllers, which cannot carry our decorator;
 * load balancers and Prometheus poll them often and must never be refused.
 */
export const UNLIMITED_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The client address: service-kit's clientAddress (the app's TRUST_PROXY hops into
 * X-Forwarded-For). A lean route's stand-in request carries it as `ip`, computed the same way.
 */
export function clientAddress(req: { ip?: string; socket?: { remoteAddress?: string } }): string {
  if (req.socket !== undefined && 'headers' in req) return addressOf(req as unknown as IncomingMessage);
  return req.ip ?? req.socket?.remoteAddress ?? 'unknown';
}

/**
 * Chooses the budget: a route's per-ip rule first; else the tenant, at its plan's limit; else the
 * authenticated caller (no tenant, or a tenant whose plan is not known yet) at the free limit; else
 * the client address at the free limit.
 */
export function rateLimitSubject(
  caller: CallerContext | undefined,
  address: string,
  rule: RateLimitRule | undefined,
  options: ResolvedRequestPoliciesOptions,
  keys: RedisKeys,
): RateLimitSubject {
  if (rule?.per === 'ip') {
    const bucket = rule.bucket ?? 'ip';
    return { kind: 'ip', id: address, key: keys.key('rl', bucket, 'ip', address), limit: rule.limit ?? options.ipLimitPerMinute };
  }
  const free = options.limits.free;
  const plan: Plan | undefined = caller?.plan;
  // The tenant budget needs the plan: charging one tenant key under two limits (a plan-less
  // request at the free limit next to its premium ones) would refuse a premium tenant at 600.
  if (caller?.tenantId && plan !== undefined && options.limits[plan] !== undefined) {
    return { kind: 'tenant', id: caller.tenantId, key: keys.tenant(caller.tenantId, 'rl', 'api'), limit: options.limits[plan] };
  }
  if (caller) return { kind: 'caller', id: caller.callerId, key: keys.key('rl', 'api', 'caller', caller.callerId), limit: free };
  return { kind: 'ip', id: address, key: keys.key('rl', 'api', 'ip', address), limit: free };
}
