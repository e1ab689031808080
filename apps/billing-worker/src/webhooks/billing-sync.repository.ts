import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

export interface LedgerEntry {
  tenantId: string;
  productKey: string;
  kind: 'invoice_paid' | 'invoice_payment_failed' | 'credit_purchase';
  stripeObjectId: string;
  stripeSubscriptionId: string | null;
  amount: number;
  currency: string;
  credits: number;
  occurredAt: Date;
}

/** A tenant as billing-worker names it to Stripe. */
export interface BillingTenant {
  id: string;
  name: string;
  primaryEmail: string;
}

/**
 * What billing-worker writes of a tenant: plan, plan entitlements, billing ledger (credits go
 * through @flagship/ledger). Every statement names the tenant.
 */
export abstract class BillingSyncRepository {
  abstract tenant(tenantId: string, m?: EntityManager): Promise<BillingTenant | null>;
  abstract setPlan(m: EntityManager, tenantId: string, plan: string, status: string): Promise<void>;
  /** A plan's entitlement; one an admin granted for the product is left as it is. */
  abstract grantPlanEntitlement(m: EntityManager, tenantId: string, productKey: string, tier: string): Promise<void>;
  /** Removes a plan's entitlement; one an admin granted stays. */
  abstract revokePlanEntitlement(m: EntityManager, tenantId: string, productKey: string): Promise<void>;
  /** True when the entry is new (its Stripe object was not recorded before under this kind). */
  abstract addLedgerEntry(m: EntityManager, e: LedgerEntry): Promise<boolean>;
  /** Serialises work on one Stripe object across replicas until the transaction ends. */
  abstract lock(m: EntityManager, key: string): Promise<void>;
}

@Injectable()
export class SqlBillingSyncRepository extends BillingSyncRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async tenant(tenantId: string, m?: EntityManager): Promise<BillingTenant | null> {
    const rows: Array<{ id: string; name: string; primary_email: string }> = await (m ?? this.ds).query(`SELECT id, name, primary_email FROM tenants WHERE id = $1`, [tenantId]);
    return rows[0] ? { id: rows[0].id, name: rows[0].name, primaryEmail: rows[0].primary_email } : null;
  }

  async setPlan(m: EntityManager, tenantId: string, plan: string, status: string): Promise<void> {
    await m.query(`UPDATE tenants SET plan = $2, subscription_status = $3, updated_at = now() WHERE id = $1 AND (plan <> $2 OR subscription_status <> $3)`, [tenantId, plan, status]);
  }

  async grantPlanEntitlement(m: EntityManager, tenantId: string, productKey: string, tier: string): Promise<void> {
    await m.query(
      `INSERT INTO entitlements (tenant_id, product_key, tier, valid_until, source) VALUES ($1, $2, $3, NULL, 'plan')
       ON CONFLICT (tenant_id, product_key) DO UPDATE SET tier = EXCLUDED.tier, valid_until = NULL, updated_at = now()
       WHERE entitlements.source = 'plan'`,
      [tenantId, productKey, tier],
    );
  }

  async revokePlanEntitlement(m: EntityManager, tenantId: string, productKey: string): Promise<void> {
    await m.query(`DELETE FROM entitlements WHERE tenant_id = $1 AND product_key = $2 AND source = 'plan'`, [tenantId, productKey]);
  }

  async addLedgerEntry(m: EntityManager, e: LedgerEntry): Promise<boolean> {
    const rows: unknown[] = await m.query(
      `INSERT INTO billing_ledger (tenant_id, product_key, kind, stripe_object_id, stripe_subscription_id, amount, currency, credits, occurred_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (kind, stripe_object_id) DO NOTHING RETURNING id`,
      [e.tenantId, e.productKey, e.kind, e.stripeObjectId, e.stripeSubscriptionId, e.amount, e.currency, e.credits, e.occurredAt],
    );
    return rows.length > 0;
  }

  async lock(m: EntityManager, key: string): Promise<void> {
    await m.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [key]);
  }
}
