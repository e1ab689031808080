import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { PlanId } from './plans';

export interface BillingCustomer {
  tenantId: string;
  productKey: string;
  stripeCustomerId: string;
}

export interface BillingSubscription {
  stripeSubscriptionId: string;
  tenantId: string;
  productKey: string;
  stripeCustomerId: string;
  stripeItemId: string | null;
  priceId: string | null;
  plan: PlanId | null;
  status: string;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  stripeCreated: number;
}

/** A Checkout Session management-api created (table checkout_sessions): what billing-worker may grant for it. */
export interface RecordedCheckoutSession {
  stripeSessionId: string;
  tenantId: string;
  productKey: string;
  kind: 'credits' | 'subscription';
  /** Credits only: the amount asked for, in the currency's smallest unit; the most the session may credit. */
  amount: number | null;
  currency: string | null;
  planId: string | null;
  createdBy: string | null;
}

const SUBSCRIPTION_COLUMNS = `stripe_subscription_id, tenant_id, product_key, stripe_customer_id, stripe_item_id, price_id, plan, status,
  current_period_start, current_period_end, cancel_at_period_end, stripe_created`;

function toSubscription(r: Record<string, unknown>): BillingSubscription {
  return {
    stripeSubscriptionId: r['stripe_subscription_id'] as string,
    tenantId: r['tenant_id'] as string,
    productKey: r['product_key'] as string,
    stripeCustomerId: r['stripe_customer_id'] as string,
    stripeItemId: (r['stripe_item_id'] as string | null) ?? null,
    priceId: (r['price_id'] as string | null) ?? null,
    plan: (r['plan'] as PlanId | null) ?? null,
    status: r['status'] as string,
    currentPeriodStart: (r['current_period_start'] as Date | null) ?? null,
    currentPeriodEnd: (r['current_period_end'] as Date | null) ?? null,
    cancelAtPeriodEnd: r['cancel_at_period_end'] as boolean,
    stripeCreated: Number(r['stripe_created']),
  };
}

/**
 * Stripe customers (one per tenant and product key), plan subscriptions as billing-worker last read
 * them, the Checkout Sessions management-api created, and billing's small state. Tenant-owned reads
 * take the tenant id first.
 */
export abstract class BillingRepository {
  abstract customer(tenantId: string, productKey: string, m?: EntityManager): Promise<BillingCustomer | null>;
  /** Whose customer this is (webhooks name customers, not tenants). */
  abstract customerByStripeId(stripeCustomerId: string, m?: EntityManager): Promise<BillingCustomer | null>;
  /**
   * The e-mail a new Stripe customer of the tenant gets: the tenant's `primaryEmail` only when it is
   * the e-mail of a member who signed in with it (the identity provider verified it), else the
   * earliest such admin's, else the earliest such member's. A member added by e-mail who never signed
   * in (`pending:` subject) proves nothing. Null when the tenant has no signed-in member.
   */
  abstract billingEmail(tenantId: string, m?: EntityManager): Promise<string | null>;
  /** Records the customer unless one exists for the tenant and product already; answers the one that holds. */
  abstract insertCustomer(tenantId: string, productKey: string, stripeCustomerId: string): Promise<BillingCustomer>;
  /** The usage subscription (on the metered price) of the tenant's customer for a product; null when none is recorded. */
  abstract usageSubscriptionId(tenantId: string, productKey: string, m?: EntityManager): Promise<string | null>;
  abstract setUsageSubscriptionId(m: EntityManager, tenantId: string, productKey: string, subscriptionId: string): Promise<void>;
  /** Forgets an ended usage subscription, so the next report subscribes the customer again. */
  abstract clearUsageSubscriptionId(m: EntityManager, tenantId: string, subscriptionId: string): Promise<void>;
  /** The tenant's plan subscription for a product: the newest live one, else the newest (by Stripe's `created`, then id). */
  abstract currentSubscription(tenantId: string, productKey: string, m?: EntityManager): Promise<BillingSubscription | null>;
  /** Records the subscription as read, or replaces what was read of it before; one recorded for another tenant stays as it was. */
  abstract upsertSubscription(m: EntityManager, s: BillingSubscription): Promise<void>;
  /** Records a Checkout Session this service created; the same session again (a replayed idempotency key) is kept as it was. */
  abstract recordCheckoutSession(s: RecordedCheckoutSession): Promise<void>;
  /** The tenant's recorded Checkout Session; null for a session this service did not create for that tenant. */
  abstract checkoutSession(tenantId: string, stripeSessionId: string, m?: EntityManager): Promise<RecordedCheckoutSession | null>;
  /** A BILLING_STATE value, or null. */
  abstract state(key: string): Promise<string | null>;
  abstract setState(key: string, value: string, m?: EntityManager): Promise<void>;
}

@Injectable()
export class SqlBillingRepository extends BillingRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async customer(tenantId: string, productKey: string, m?: EntityManager): Promise<BillingCustomer | null> {
    const rows: Array<Record<string, unknown>> = await (m ?? this.ds).query(
      `SELECT tenant_id, product_key, stripe_customer_id FROM billing_customers WHERE tenant_id = $1 AND product_key = $2`,
      [tenantId, productKey],
    );
    return rows[0] ? { tenantId: rows[0]['tenant_id'] as string, productKey: rows[0]['product_key'] as string, stripeCustomerId: rows[0]['stripe_customer_id'] as string } : null;
  }

  async customerByStripeId(stripeCustomerId: string, m?: EntityManager): Promise<BillingCustomer | null> {
    const rows: Array<Record<string, unknown>> = await (m ?? this.ds).query(
      `SELECT tenant_id, product_key, stripe_customer_id FROM billing_customers WHERE stripe_customer_id = $1`,
      [stripeCustomerId],
    );
    return rows[0] ? { tenantId: rows[0]['tenant_id'] as string, productKey: rows[0]['product_key'] as string, stripeCustomerId } : null;
  }

  async billingEmail(tenantId: string, m?: EntityManager): Promise<string | null> {
    const rows: Array<{ email: string }> = await (m ?? this.ds).query(
      `SELECT u.email FROM memberships ms JOIN users u ON u.id = ms.user_id JOIN tenants t ON t.id = ms.tenant_id
       WHERE ms.tenant_id = $1 AND t.id = $1 AND u.idp_subject NOT LIKE 'pending:%'
       ORDER BY lower(u.email) = lower(t.primary_email) DESC, ms.role = 'admin' DESC, ms.created_at, u.id
       LIMIT 1`,
      [tenantId],
    );
    return rows[0]?.email ?? null;
  }

  async insertCustomer(tenantId: string, productKey: string, stripeCustomerId: string): Promise<BillingCustomer> {
    await this.ds.query(
      `INSERT INTO billing_customers (tenant_id, product_key, stripe_customer_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [tenantId, productKey, stripeCustomerId],
    );
    const held = await this.customer(tenantId, productKey);
    if (!held) throw new Error('billing customer vanished after insert');
    return held;
  }

  async usageSubscriptionId(tenantId: string, productKey: string, m?: EntityManager): Promise<string | null> {
    const rows: Array<{ usage_subscription_id: string | null }> = await (m ?? this.ds).query(
      `SELECT usage_subscription_id FROM billing_customers WHERE tenant_id = $1 AND product_key = $2`,
      [tenantId, productKey],
    );
    return rows[0]?.usage_subscription_id ?? null;
  }

  async setUsageSubscriptionId(m: EntityManager, tenantId: string, productKey: string, subscriptionId: string): Promise<void> {
    await m.query(`UPDATE billing_customers SET usage_subscription_id = $3 WHERE tenant_id = $1 AND product_key = $2`, [tenantId, productKey, subscriptionId]);
  }

  async clearUsageSubscriptionId(m: EntityManager, tenantId: string, subscriptionId: string): Promise<void> {
    await m.query(`UPDATE billing_customers SET usage_subscription_id = NULL WHERE tenant_id = $1 AND usage_subscription_id = $2`, [tenantId, subscriptionId]);
  }

  async currentSubscription(tenantId: string, productKey: string, m?: EntityManager): Promise<BillingSubscription | null> {
    const rows: Array<Record<string, unknown>> = await (m ?? this.ds).query(
      `SELECT ${SUBSCRIPTION_COLUMNS} FROM billing_subscriptions WHERE tenant_id = $1 AND product_key = $2
       ORDER BY (status IN ('active', 'trialing', 'past_due')) DESC, stripe_created DESC, stripe_subscription_id DESC LIMIT 1`,
      [tenantId, productKey],
    );
    return rows[0] ? toSubscription(rows[0]) : null;
  }

  async upsertSubscription(m: EntityManager, s: BillingSubscription): Promise<void> {
    await m.query(
      `INSERT INTO billing_subscriptions (${SUBSCRIPTION_COLUMNS}, synced_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now())
       ON CONFLICT (stripe_subscription_id) DO UPDATE SET stripe_item_id = EXCLUDED.stripe_item_id, price_id = EXCLUDED.price_id, plan = EXCLUDED.plan,
         status = EXCLUDED.status, current_period_start = EXCLUDED.current_period_start, current_period_end = EXCLUDED.current_period_end,
         cancel_at_period_end = EXCLUDED.cancel_at_period_end, synced_at = now()
       WHERE billing_subscriptions.tenant_id = EXCLUDED.tenant_id`,
      [s.stripeSubscriptionId, s.tenantId, s.productKey, s.stripeCustomerId, s.stripeItemId, s.priceId, s.plan, s.status, s.currentPeriodStart, s.currentPeriodEnd, s.cancelAtPeriodEnd, s.stripeCreated],
    );
  }

  async recordCheckoutSession(s: RecordedCheckoutSession): Promise<void> {
    await this.ds.query(
      `INSERT INTO checkout_sessions (stripe_session_id, tenant_id, product_key, kind, amount, currency, plan_id, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (stripe_session_id) DO NOTHING`,
      [s.stripeSessionId, s.tenantId, s.productKey, s.kind, s.amount, s.currency, s.planId, s.createdBy],
    );
  }

  async checkoutSession(tenantId: string, stripeSessionId: string, m?: EntityManager): Promise<RecordedCheckoutSession | null> {
    const rows: Array<Record<string, unknown>> = await (m ?? this.ds).query(
      `SELECT stripe_session_id, tenant_id, product_key, kind, amount, currency, plan_id, created_by FROM checkout_sessions WHERE tenant_id = $1 AND stripe_session_id = $2`,
      [tenantId, stripeSessionId],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      stripeSessionId: r['stripe_session_id'] as string,
      tenantId: r['tenant_id'] as string,
      productKey: r['product_key'] as string,
      kind: r['kind'] as RecordedCheckoutSession['kind'],
      amount: r['amount'] === null ? null : Number(r['amount']),
      currency: (r['currency'] as string | null) ?? null,
      planId: (r['plan_id'] as string | null) ?? null,
      createdBy: (r['created_by'] as string | null) ?? null,
    };
  }

  async state(key: string): Promise<string | null> {
    const rows: Array<{ value: string }> = await this.ds.query(`SELECT value FROM billing_state WHERE key = $1`, [key]);
    return rows[0]?.value ?? null;
  }

  async setState(key: string, value: string, m?: EntityManager): Promise<void> {
    await (m ?? this.ds).query(
      `INSERT INTO billing_state (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
      [key, value],
    );
  }
}

/** billing_state keys. */
export const BILLING_STATE = {
  /** The portal configuration billing-worker keeps allowing every plan price. */
  portalConfigurationId: 'portal_configuration_id',
  /** The billing meter metered gateway usage is reported to, and the metered price on it. */
  usageMeterId: 'usage_meter_id',
  usagePriceId: 'usage_price_id',
  /** Stripe `created` of the newest event the catch-up has seen. */
  eventsWatermark: 'events_watermark',
  /** Unix seconds since when management-api records its Checkout Sessions (set by the migration that began it). */
  checkoutSessionsRecordedSince: 'checkout_sessions_recorded_since',
} as const;
