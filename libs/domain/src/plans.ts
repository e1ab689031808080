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
