import type { SecretReader } from './stripe-api';

export const PLAN_IDS = ['free', 'standard', 'premium'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

const PRICE_SECRET: Record<PlanId, string> = { free: 'STRIPE_PRICE_FREE', standard: 'STRIPE_PRICE_STANDARD', premium: 'STRIPE_PRICE_PREMIUM' };

/** The own product; the plan subscription of this product key sets the tenant's plan. */
export const PLAN_PRODUCT_KEY = 'core';

/** What a plan grants at the gateway (CONTRACT.md section 7: premium grants `enterprise` for `core`). */
export const PLAN_ENTITLEMENTS: Record<PlanId, ReadonlyArray<{ productKey: string; tier: 'enterprise' | 'enterprise_plus_suite' }>> = {
  free: [],
  standard: [],
  premium: [{ productKey: 'core', tier: 'enterprise' }],
};

/** Subscription states in which the customer can still change plans in the portal, and the plan holds. */
export const LIVE_SUBSCRIPTION_STATUSES = ['active', 'trialing', 'past_due'] as const;

export function planPriceId(secrets: SecretReader, plan: PlanId): string | undefined {
  return secrets.get(PRICE_SECRET[plan]);
}

/** Every configured plan price, by plan. */
export function planPrices(secrets: SecretReader): Array<{ plan: PlanId; priceId: string }> {
  return PLAN_IDS.flatMap((plan) => {
    const priceId = planPriceId(secrets, plan);
    return priceId ? [{ plan, priceId }] : [];
  });
}

export function planOfPrice(secrets: SecretReader, priceId: string | null | undefined): PlanId | undefined {
  if (!priceId) return undefined;
  return planPrices(secrets).find((p) => p.priceId === priceId)?.plan;
}
