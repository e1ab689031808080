import { DEFAULT_RATE_LIMITS, type Plan } from '@flagship/domain';

export const REQUEST_POLICIES_OPTIONS = Symbol('REQUEST_POLICIES_OPTIONS');

export interface RequestPoliciesOptions {
  /** Requests per window per tenant, by plan (CONTRACT.md section 4 defaults: 600 / 3000 / 12000). */
  limits?: Partial<Record<Plan, number>>;
  /** Requests per window per client address on `@RateLimit({ per: 'ip' })` routes (default 60). */
  ipLimitPerMinute?: number;
  /** The rate-limit window; one minute unless a test wants to watch it roll over. */
  windowMs?: number;
  /** How long a completed idempotent response is replayed (default 24 h). */
  idempotencyTtlMs?: number;
  /**
   * How long a claim survives without a heartbeat. The owning process renews it while the handler
   * runs, so this only bounds how long a crashed replica's key answers 409 (default 60 s).
   */
  idempotencyInFlightTtlMs?: number;
  /** A Redis call slower than this counts as Redis being down (default 500 ms). */
  redisTimeoutMs?: number;
}

export type ResolvedRequestPoliciesOptions = Readonly<{
  limits: Readonly<Record<Plan, number>>;
  ipLimitPerMinute: number;
  windowMs: number;
  idempotencyTtlMs: number;
  idempotencyInFlightTtlMs: number;
  redisTimeoutMs: number;
}>;

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`request policies: ${name} must be a positive integer, got ${String(value)}`);
  return value;
}

/** Fills in the defaults and refuses nonsense at start-up rather than at the first request. */
export function resolveRequestPoliciesOptions(options: RequestPoliciesOptions = {}): ResolvedRequestPoliciesOptions {
  const limits = { ...DEFAULT_RATE_LIMITS, ...options.limits };
  for (const [plan, limit] of Object.entries(limits)) positiveInteger(`limits.${plan}`, limit);
  return {
    limits,
    ipLimitPerMinute: positiveInteger('ipLimitPerMinute', options.ipLimitPerMinute ?? 60),
    windowMs: positiveInteger('windowMs', options.windowMs ?? 60_000),
    idempotencyTtlMs: positiveInteger('idempotencyTtlMs', options.idempotencyTtlMs ?? 24 * 60 * 60 * 1000),
    idempotencyInFlightTtlMs: positiveInteger('idempotencyInFlightTtlMs', options.idempotencyInFlightTtlMs ?? 60_000),
    redisTimeoutMs: positiveInteger('redisTimeoutMs', options.redisTimeoutMs ?? 500),
  };
}
