import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

export interface TenantEntitlement {
  productKey: string;
  tier: string;
  validUntil: Date | null;
}

/** What the gateway needs of a tenant: plan, switches, entitlements, whether it is paused. */
export interface TenantContext {
  id: string;
  plan: string;
  subscriptionStatus: string;
  zeroRated: boolean;
  hostedProviderAllowed: boolean;
  entitlements: TenantEntitlement[];
  /** A dispute of one of its credit purchases is open at Stripe: the gateway refuses it until it closes. */
  paused: boolean;
}

interface Row {
  id: string;
  plan: string;
  subscription_status: string;
  zero_rated: boolean;
  hosted_provider_allowed: boolean;
  paused: boolean;
  entitlements: Array<{ productKey: string; tier: string; validUntil: string | null }>;
}

/** Tenants and their entitlements, read-only, in one query per tenant. */
@Injectable()
export class TenantContextRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  async find(tenantId: string): Promise<TenantContext | undefined> {
    const rows: Row[] = await this.ds.query(
      `SELECT t.id, t.plan, t.subscription_status, t.zero_rated, t.hosted_provider_allowed,
              EXISTS (SELECT 1 FROM credit_purchases cp WHERE cp.tenant_id = t.id AND cp.dispute_open) AS paused,
              COALESCE(json_agg(json_build_object('productKey', e.product_key, 'tier', e.tier, 'validUntil', e.valid_until))
                         FILTER (WHERE e.product_key IS NOT NULL), '[]') AS entitlements
         FROM tenants t
         LEFT JOIN entitlements e ON e.tenant_id = t.id
        WHERE t.id = $1
        GROUP BY t.id`,
      [tenantId],
    );
    const r = rows[0];
    if (r === undefined) return undefined;
    return {
      id: r.id,
      plan: r.plan,
      subscriptionStatus: r.subscription_status,
      zeroRated: r.zero_rated,
      hostedProviderAllowed: r.hosted_provider_allowed,
      paused: r.paused,
      entitlements: r.entitlements.map((e) => ({ productKey: e.productKey, tier: e.tier, validUntil: e.validUntil === null ? null : new Date(e.validUntil) })),
    };
  }
}
