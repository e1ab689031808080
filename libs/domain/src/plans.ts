/** Subscription plans (seed section 2). */
export const PLANS = ['free', 'standard', 'premium'] as const;
export type Plan = (typeof PLANS)[number];

export const SUBSCRIPTION_STATUSES = ['active', 'trialing', 'past_due', 'canceled', 'incomplete', 'unpaid'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const BILLING_CYCLES = ['monthly', 'yearly'] as const;
export type BillingCycle = (typeof BILLING_CYCLES)[number];

/** Default per-tenant requests per minute (CONTRACT.md section 4); configuration may override. */
export const DEFAULT_RATE_LIMITS: Readonly<Record<Plan, number>> = { free: 600, standard: 3000, premium: 12000 };

export function isPlan(value: unknown): value is Plan {
  return typeof value === 'string' && (PLANS as readonly string[]).includes(value);
}

/**
 * Months of usage rows (usage_ledger) a tenant's plan keeps besides the running month, once the operator
 * turns retention on (billing-worker's USAGE_RETENTION_MONTHS, which caps them all). Whole monthly
 * partitions go at the longest of them; a plan keeping less has its older rows deleted in batches.
 * Rows still pending or not yet reported to Stripe's meter are kept whatever the plan
 * (docs/decisions/2026-11-29-partitioned-ledger.md).
 */
export const USAGE_RETENTION_MONTHS: Readonly<Record<Plan, number>> = { free: 3, standard: 12, premium: 24 };
