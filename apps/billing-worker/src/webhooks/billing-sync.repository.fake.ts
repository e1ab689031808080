import type { Tx } from '@flagship/persistence';
import { BillingSyncRepository, type BillingTenant, type LedgerEntry } from './billing-sync.repository';

export interface FakeTenantBilling extends BillingTenant {
  plan: string;
  subscriptionStatus: string;
}

export interface FakeEntitlement {
  tenantId: string;
  productKey: string;
  tier: string;
  source: 'plan' | 'admin';
}

/**
 * In-memory twin of SqlBillingSyncRepository for unit tests: the tenants' plans, their
 * entitlements and the billing ledger, no I/O. `locks` records the keys locked, in order (there is
 * nothing to wait for: a unit test runs one thing at a time).
 */
export class FakeBillingSyncRepository extends BillingSyncRepository {
  readonly tenants = new Map<string, FakeTenantBilling>();
  readonly entitlements: FakeEntitlement[] = [];
  readonly ledger: LedgerEntry[] = [];
  readonly locks: string[] = [];

  /** A tenant as sign-up leaves it: plan free, active. */
  seedTenant(id: string, name = 'Acme', primaryEmail = 'ops@acme.test'): FakeTenantBilling {
    const t = { id, name, primaryEmail, plan: 'free', subscriptionStatus: 'active' };
    this.tenants.set(id, t);
    return t;
  }

  async tenant(tenantId: string): Promise<BillingTenant | null> {
    const t = this.tenants.get(tenantId);
    return t ? { id: t.id, name: t.name, primaryEmail: t.primaryEmail } : null;
  }

  async setPlan(_m: Tx, tenantId: string, plan: string, status: string): Promise<void> {
    const t = this.tenants.get(tenantId);
    if (t) Object.assign(t, { plan, subscriptionStatus: status });
  }

  async grantPlanEntitlement(_m: Tx, tenantId: string, productKey: string, tier: string): Promise<void> {
    const held = this.entitlements.find((e) => e.tenantId === tenantId && e.productKey === productKey);
    if (!held) this.entitlements.push({ tenantId, productKey, tier, source: 'plan' });
    else if (held.source === 'plan') held.tier = tier;
  }

  async revokePlanEntitlement(_m: Tx, tenantId: string, productKey: string): Promise<void> {
    const i = this.entitlements.findIndex((e) => e.tenantId === tenantId && e.productKey === productKey && e.source === 'plan');
    if (i >= 0) this.entitlements.splice(i, 1);
  }

  async addLedgerEntry(_m: Tx, e: LedgerEntry): Promise<boolean> {
    if (this.ledger.some((x) => x.kind === e.kind && x.stripeObjectId === e.stripeObjectId)) return false;
    this.ledger.push({ ...e });
    return true;
  }

  async lock(_m: Tx, key: string): Promise<void> {
    this.locks.push(key);
  }
}
