import { Injectable } from '@nestjs/common';
import { BillingRepository, PLAN_PRODUCT_KEY } from '@flagship/billing';
import type { TenantEntity } from '@flagship/persistence';
import type { SubscriptionDto } from './subscription.dto';

/**
 * `GET /api/billing/subscription`: the plan subscription as billing-worker last synced it from
 * Stripe (no Stripe call, so it answers while Stripe is down); the tenant's plan when it has none.
 */
@Injectable()
export class SubscriptionService {
  constructor(private readonly billing: BillingRepository) {}

  async get(tenant: TenantEntity): Promise<SubscriptionDto> {
    const s = await this.billing.currentSubscription(tenant.id, PLAN_PRODUCT_KEY);
    if (!s) {
      return { id: null, plan: tenant.plan, status: tenant.subscriptionStatus, currentPeriodStart: null, currentPeriodEnd: null, cancelAtPeriodEnd: false, productKey: PLAN_PRODUCT_KEY };
    }
    return {
      id: s.stripeSubscriptionId,
      plan: s.plan ?? tenant.plan,
      status: s.status,
      currentPeriodStart: s.currentPeriodStart?.toISOString() ?? null,
      currentPeriodEnd: s.currentPeriodEnd?.toISOString() ?? null,
      cancelAtPeriodEnd: s.cancelAtPeriodEnd,
      productKey: s.productKey,
    };
  }
}
