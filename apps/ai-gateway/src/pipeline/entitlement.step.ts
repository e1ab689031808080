import type { ClientPrincipal } from '@flagship/oauth';
import { GatewayError } from '../gateway.errors';
import type { TenantContext } from '../tenants/tenant-context.repository';
import type { ResolvedProduct } from './product-key.step';

/** How a request is charged: `zeroRatedReason` set means debit 0, recorded with that reason. */
export interface Rating {
  zeroRatedReason: 'internal_product' | 'tenant_zero_rated' | null;
}

const ENTERPRISE_TIERS: ReadonlySet<string> = new Set(['enterprise', 'enterprise_plus_suite']);
const LIVE_SUBSCRIPTION: ReadonlySet<string> = new Set(['active', 'trialing']);

/**
 * Step 4 (CONTRACT.md section 7): an internal suite product must be in the client's `product_keys`
 * allow-list (as must the own product when that list is not empty) and is zero-rated (enterprise-equivalent access without billing); an external consumer
 * needs an `enterprise` or `enterprise_plus_suite` entitlement for the product that has not expired,
 * the premium plan counting as `enterprise` for the own product, and is billed unless the tenant is
 * flagged zero-rated.
 */
export class EntitlementStep {
  constructor(private readonly ownProductKey: string) {}

  check(principal: ClientPrincipal, product: ResolvedProduct, tenant: TenantContext, now = Date.now()): Rating {
    if (product.internal) {
      if (!principal.productKeys.includes(product.key)) {
        throw new GatewayError(403, 'product_not_allowed', `This OAuth client is not allowed the internal product ${product.key}.`, 'x-service-product-key');
      }
      return { zeroRatedReason: 'internal_product' };
    }
    // A client's allow-list, when set, names every product it may use, the own product included;
    // an empty list (none given at creation) leaves the own product open, as before.
    if (principal.productKeys.length > 0 && !principal.productKeys.includes(product.key)) {
      throw new GatewayError(403, 'product_not_allowed', `This OAuth client's product keys do not include ${product.key}.`, 'x-service-product-key');
    }
    if (!this.entitled(tenant, product.key, now)) {
      throw new GatewayError(
        403,
        'entitlement_required',
        `The tenant needs an active enterprise or enterprise_plus_suite entitlement for ${product.key} to use the gateway.`,
      );
    }
    return { zeroRatedReason: tenant.zeroRated ? 'tenant_zero_rated' : null };
  }

  private entitled(tenant: TenantContext, productKey: string, now: number): boolean {
    if (productKey === this.ownProductKey && tenant.plan === 'premium' && LIVE_SUBSCRIPTION.has(tenant.subscriptionStatus)) return true;
    return tenant.entitlements.some(
      (e) => e.productKey === productKey && ENTERPRISE_TIERS.has(e.tier) && (e.validUntil === null || e.validUntil.getTime() > now),
    );
  }
}
