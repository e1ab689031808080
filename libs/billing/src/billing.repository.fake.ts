import type { Tx } from '@flagship/persistence';
import { type BillingCustomer, BillingRepository, type BillingSubscription, type RecordedCheckoutSession } from './billing.repository';

const LIVE = new Set(['active', 'trialing', 'past_due']);

/** A tenant's member as billingEmail weighs them: members in the order they joined. */
export interface FakeBillingMember {
  tenantId: string;
  email: string;
  role: 'admin' | 'editor' | 'viewer';
  /** False for someone added by e-mail who never signed in (their e-mail proves nothing). */
  signedIn: boolean;
}

/**
 * In-memory twin of SqlBillingRepository for unit tests: same contract, no I/O. It holds what the
 * real one reads from other tables: the tenants' primary e-mails and members (`primaryEmails`,
 * `members`), for billingEmail.
 */
export class FakeBillingRepository extends BillingRepository {
  readonly customers: Array<BillingCustomer & { usageSubscriptionId: string | null }> = [];
  readonly subscriptions = new Map<string, BillingSubscription>();
  readonly sessions = new Map<string, RecordedCheckoutSession>();
  readonly states = new Map<string, string>();
  readonly primaryEmails = new Map<string, string>();
  readonly members: FakeBillingMember[] = [];

  private find(tenantId: string, productKey: string) {
    return this.customers.find((c) => c.tenantId === tenantId && c.productKey === productKey);
  }

  async customer(tenantId: string, productKey: string): Promise<BillingCustomer | null> {
    const c = this.find(tenantId, productKey);
    return c ? { tenantId: c.tenantId, productKey: c.productKey, stripeCustomerId: c.stripeCustomerId } : null;
  }

  async customerByStripeId(stripeCustomerId: string): Promise<BillingCustomer | null> {
    const c = this.customers.find((x) => x.stripeCustomerId === stripeCustomerId);
    return c ? { tenantId: c.tenantId, productKey: c.productKey, stripeCustomerId } : null;
  }

  async billingEmail(tenantId: string): Promise<string | null> {
    const primary = this.primaryEmails.get(tenantId)?.toLowerCase();
    const proven = this.members.filter((ms) => ms.tenantId === tenantId && ms.signedIn);
    const rank = (ms: FakeBillingMember) => (ms.email.toLowerCase() === primary ? 0 : ms.role === 'admin' ? 1 : 2);
    // A stable sort keeps joining order within a rank.
    return [...proven].sort((a, b) => rank(a) - rank(b))[0]?.email ?? null;
  }

  async insertCustomer(tenantId: string, productKey: string, stripeCustomerId: string): Promise<BillingCustomer> {
    if (!this.find(tenantId, productKey) && !this.customers.some((c) => c.stripeCustomerId === stripeCustomerId)) {
      this.customers.push({ tenantId, productKey, stripeCustomerId, usageSubscriptionId: null });
    }
    const held = await this.customer(tenantId, productKey);
    if (!held) throw new Error('billing customer vanished after insert');
    return held;
  }

  async usageSubscriptionId(tenantId: string, productKey: string): Promise<string | null> {
    return this.find(tenantId, productKey)?.usageSubscriptionId ?? null;
  }

  async setUsageSubscriptionId(_m: Tx, tenantId: string, productKey: string, subscriptionId: string): Promise<void> {
    if (this.customers.some((c) => c.usageSubscriptionId === subscriptionId && (c.tenantId !== tenantId || c.productKey !== productKey))) {
      throw Object.assign(new Error('duplicate key value violates unique constraint "billing_customers_usage_subscription_id_key"'), { code: '23505' });
    }
    const c = this.find(tenantId, productKey);
    if (c) c.usageSubscriptionId = subscriptionId;
  }

  async clearUsageSubscriptionId(_m: Tx, tenantId: string, subscriptionId: string): Promise<void> {
    for (const c of this.customers) if (c.tenantId === tenantId && c.usageSubscriptionId === subscriptionId) c.usageSubscriptionId = null;
  }

  async currentSubscription(tenantId: string, productKey: string): Promise<BillingSubscription | null> {
    const key = (s: BillingSubscription) => [LIVE.has(s.status) ? 1 : 0, s.stripeCreated, s.stripeSubscriptionId] as const;
    const newest = [...this.subscriptions.values()]
      .filter((s) => s.tenantId === tenantId && s.productKey === productKey)
      .sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        return y[0] - x[0] || y[1] - x[1] || (y[2] < x[2] ? -1 : y[2] > x[2] ? 1 : 0);
      })[0];
    return newest ? { ...newest } : null;
  }

  async upsertSubscription(_m: Tx, s: BillingSubscription): Promise<void> {
    const held = this.subscriptions.get(s.stripeSubscriptionId);
    if (!held) this.subscriptions.set(s.stripeSubscriptionId, { ...s });
    else if (held.tenantId === s.tenantId) {
      // As the real one: who it belongs to and when Stripe made it are kept from the first read.
      const { stripeItemId, priceId, plan, status, currentPeriodStart, currentPeriodEnd, cancelAtPeriodEnd } = s;
      Object.assign(held, { stripeItemId, priceId, plan, status, currentPeriodStart, currentPeriodEnd, cancelAtPeriodEnd });
    }
  }

  async recordCheckoutSession(s: RecordedCheckoutSession): Promise<void> {
    if (!this.sessions.has(s.stripeSessionId)) this.sessions.set(s.stripeSessionId, { ...s });
  }

  async checkoutSession(tenantId: string, stripeSessionId: string): Promise<RecordedCheckoutSession | null> {
    const s = this.sessions.get(stripeSessionId);
    return s && s.tenantId === tenantId ? { ...s } : null;
  }

  async state(key: string): Promise<string | null> {
    return this.states.get(key) ?? null;
  }

  async setState(key: string, value: string): Promise<void> {
    this.states.set(key, value);
  }
}
