import { Inject, Injectable, Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import type { Tx as EntityManager } from '@flagship/persistence';
import {
  BILLING_STATE,
  BillingRepository,
  LIVE_SUBSCRIPTION_STATUSES,
  PLAN_ENTITLEMENTS,
  PLAN_IDS,
  PLAN_PRODUCT_KEY,
  planOfPrice,
  type BillingCustomer,
  type RecordedCheckoutSession,
  type SecretReader,
} from '@flagship/billing';
import { APP_CONFIG } from '@flagship/config';
import type { BillingWorkerConfig } from '../env.schema';
import { isUsageSubscription, UsagePricingService } from '../metering/usage-pricing.service';
import { StripeAccount } from '../stripe/stripe-account';
import { BILLING_SECRETS } from '../stripe/stripe.tokens';
import { CreditsRepository } from '@flagship/ledger';
import { BillingSyncRepository } from './billing-sync.repository';
import { CreditReversalsService } from './credit-reversals.service';

const toDate = (s: number | null | undefined): Date | null => (typeof s === 'number' ? new Date(s * 1000) : null);
const idOf = (v: unknown): string | null => (typeof v === 'string' ? v : v && typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string' ? (v as { id: string }).id : null);

/**
 * The effects of Stripe events, each inside the caller's transaction (the one that marks the event
 * processed). Subscriptions are re-read from Stripe rather than taken from the event: Stripe
 * delivers out of order, and the newest read is the truth. Answers the tenants whose state changed.
 */
@Injectable()
export class BillingSyncService {
  private readonly log = new Logger(BillingSyncService.name);

  constructor(
    private readonly stripe: StripeAccount,
    @Inject(BILLING_SECRETS) private readonly secrets: SecretReader,
    @Inject(APP_CONFIG) private readonly config: Pick<BillingWorkerConfig, 'BILLING_MICRO_CREDITS_PER_CENT'>,
    private readonly billing: BillingRepository,
    private readonly sync: BillingSyncRepository,
    @Inject(CreditsRepository) private readonly credits: Pick<CreditsRepository, 'grantCredits'>,
    private readonly usagePricing: UsagePricingService,
    private readonly reversals: CreditReversalsService,
  ) {}

  /** Whose Stripe customer this is; our own mapping only (a customer we did not create is ignored). */
  private customer(m: EntityManager, customerId: string | null): Promise<BillingCustomer | null> {
    return customerId ? this.billing.customerByStripeId(customerId, m) : Promise.resolve(null);
  }

  async syncSubscription(m: EntityManager, subscriptionId: string): Promise<string[]> {
    // Two events of one subscription processed at once on two replicas: the later reader writes last.
    await this.sync.lock(m, `subscription:${subscriptionId}`);
    const sub = await this.stripe.subscription(subscriptionId);
    if (!sub) {
      this.log.warn(`subscription ${subscriptionId} no longer exists at Stripe`);
      return [];
    }
    const owner = await this.customer(m, idOf(sub.customer));
    if (!owner) {
      this.log.warn(`subscription ${sub.id}: customer ${idOf(sub.customer) ?? '?'} belongs to no tenant; ignored`);
      return [];
    }
    // A usage subscription (metered price) is no plan: it never sets the tenant's plan or entitlements.
    if (isUsageSubscription(sub)) {
      await this.usagePricing.subscriptionChanged(m, owner.tenantId, sub);
      return [];
    }
    const item = sub.items.data[0];
    if (sub.items.data.length > 1) this.log.warn(`subscription ${sub.id} has ${sub.items.data.length} items; the plan is read from the first`);
    const priceId = item?.price.id ?? null;
    await this.billing.upsertSubscription(m, {
      stripeSubscriptionId: sub.id,
      tenantId: owner.tenantId,
      productKey: owner.productKey,
      stripeCustomerId: owner.stripeCustomerId,
      stripeItemId: item?.id ?? null,
      priceId,
      plan: planOfPrice(this.secrets, priceId) ?? null,
      status: sub.status,
      // Since API version 2025-03-31 the period lives on the items.
      currentPeriodStart: toDate(item?.current_period_start),
      currentPeriodEnd: toDate(item?.current_period_end),
      cancelAtPeriodEnd: sub.cancel_at_period_end,
      stripeCreated: sub.created,
    });
    if (owner.productKey === PLAN_PRODUCT_KEY) await this.refreshTenantPlan(m, owner.tenantId);
    return [owner.tenantId];
  }

  /** Plan, status and plan entitlements from the tenant's current plan subscription. */
  private async refreshTenantPlan(m: EntityManager, tenantId: string): Promise<void> {
    const current = await this.billing.currentSubscription(tenantId, PLAN_PRODUCT_KEY, m);
    const live = current !== null && (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(current.status);
    const plan = live && current.plan ? current.plan : 'free';
    await this.sync.setPlan(m, tenantId, plan, current?.status ?? 'active');
    const granted = new Map(PLAN_ENTITLEMENTS[plan].map((e) => [e.productKey, e.tier]));
    const governed = new Set(PLAN_IDS.flatMap((p) => PLAN_ENTITLEMENTS[p].map((e) => e.productKey)));
    for (const productKey of governed) {
      const tier = granted.get(productKey);
      if (tier) await this.sync.grantPlanEntitlement(m, tenantId, productKey, tier);
      else await this.sync.revokePlanEntitlement(m, tenantId, productKey);
    }
  }

  /**
   * A completed Checkout Session. The event's copy is only a pointer: the session is re-read from
   * Stripe, and credits are granted only for a session management-api recorded for the customer's
   * tenant, paid and complete, and never more than the amount recorded. Anything else (a session
   * Stripe does not know, one created elsewhere, another tenant's) is logged and grants nothing; the
   * event still counts as processed.
   */
  async checkoutCompleted(m: EntityManager, event: Stripe.Checkout.Session): Promise<string[]> {
    if (event.mode === 'subscription') {
      // The subscription itself is re-read from Stripe and must belong to one of our customers.
      const subId = idOf(event.subscription);
      return subId ? this.syncSubscription(m, subId) : [];
    }
    if (event.mode !== 'payment' || event.metadata?.['kind'] !== 'credits') return [];
    if (typeof event.id !== 'string' || event.id === '') return [];
    const session = await this.stripe.checkoutSession(event.id);
    if (!session) {
      this.log.warn(`checkout ${event.id.slice(0, 80)}: Stripe has no such session; no credits granted`);
      return [];
    }
    if (session.mode !== 'payment' || session.status !== 'complete' || session.payment_status !== 'paid') {
      // Async payment methods: checkout.session.async_payment_succeeded follows once paid.
      if (session.payment_status !== 'unpaid') this.log.warn(`checkout ${session.id}: ${session.mode} ${session.status ?? '?'} ${session.payment_status}; no credits granted`);
      return [];
    }
    const owner = await this.customer(m, idOf(session.customer));
    if (!owner) {
      this.log.warn(`checkout ${session.id}: customer belongs to no tenant; no credits granted`);
      return [];
    }
    const recorded = (await this.billing.checkoutSession(owner.tenantId, session.id, m)) ?? (await this.fromBeforeRecording(session, owner.tenantId));
    if (!recorded || recorded.kind !== 'credits' || recorded.amount === null) {
      this.log.warn(`checkout ${session.id}: not a credit purchase management-api created for tenant ${owner.tenantId}; no credits granted`);
      return [];
    }
    if ((session.currency ?? '').toLowerCase() !== (recorded.currency ?? '').toLowerCase()) {
      this.log.warn(`checkout ${session.id}: paid in ${session.currency ?? '?'} but created in ${recorded.currency ?? '?'}; no credits granted`);
      return [];
    }
    const paid = session.amount_total ?? 0;
    if (paid !== recorded.amount) this.log.warn(`checkout ${session.id}: amount_total ${paid} differs from the ${recorded.amount} recorded; granting for the lesser`);
    const amount = Math.max(0, Math.min(paid, recorded.amount));
    const credits = amount * this.config.BILLING_MICRO_CREDITS_PER_CENT;
    const fresh = await this.sync.addLedgerEntry(m, {
      tenantId: owner.tenantId,
      productKey: owner.productKey,
      kind: 'credit_purchase',
      stripeObjectId: session.id,
      stripeSubscriptionId: null,
      amount,
      currency: session.currency ?? 'usd',
      credits,
      occurredAt: new Date(session.created * 1000),
    });
    // Once per checkout session, whichever event (completed, async_payment_succeeded, a catch-up) gets here first.
    if (!fresh) return [];
    await this.credits.grantCredits(m, owner.tenantId, { amount: credits, reason: `stripe checkout ${session.id}`, grantedBy: 'stripe' });
    // Kept with its payment intent, so a refund or dispute of its charge finds what to take back.
    await this.reversals.purchased(m, {
      stripeSessionId: session.id,
      tenantId: owner.tenantId,
      productKey: owner.productKey,
      stripePaymentIntentId: idOf(session.payment_intent),
      amount: paid,
      currency: session.currency ?? 'usd',
      credits,
    });
    return [owner.tenantId];
  }

  /**
   * A charge was refunded or disputed (charge.refunded, refund.*, charge.dispute.*): the event is a
   * pointer; the charge and its disputes are re-read from Stripe (the newest read is the truth, as for
   * subscriptions), under a lock per charge so the later reader writes last.
   */
  async chargeChanged(m: EntityManager, chargeId: string): Promise<string[]> {
    await this.sync.lock(m, `charge:${chargeId}`);
    const charge = await this.stripe.charge(chargeId);
    if (!charge) {
      this.log.warn(`charge ${chargeId.slice(0, 80)}: Stripe has no such charge; nothing taken back`);
      return [];
    }
    const disputes = await this.stripe.disputes(charge.id);
    const owner = await this.customer(m, idOf(charge.customer));
    return this.reversals.chargeChanged(
      m,
      {
        chargeId: charge.id,
        paymentIntentId: idOf(charge.payment_intent),
        customerTenantId: owner?.tenantId ?? null,
        amountRefunded: charge.amount_refunded,
        disputes: disputes.map((d) => ({ id: d.id, amount: d.amount, status: d.status })),
      },
      (pi) => this.stripe.sessionOfPaymentIntent(pi),
    );
  }

  /**
   * A session created before management-api recorded its sessions (the upgrade; Checkout Sessions
   * expire within a day): Stripe's own copy, for the tenant its metadata and customer both name.
   */
  private async fromBeforeRecording(session: Stripe.Checkout.Session, tenantId: string): Promise<RecordedCheckoutSession | null> {
    const since = Number(await this.billing.state(BILLING_STATE.checkoutSessionsRecordedSince));
    if (!Number.isFinite(since) || since <= 0 || session.created >= since) return null;
    if (session.metadata?.['kind'] !== 'credits' || session.metadata?.['tenantId'] !== tenantId) return null;
    const productKey = session.metadata?.['productKey'] ?? PLAN_PRODUCT_KEY;
    return { stripeSessionId: session.id, tenantId, productKey, kind: 'credits', amount: session.amount_total ?? 0, currency: session.currency, planId: null, createdBy: null };
  }

  async invoice(m: EntityManager, invoice: Stripe.Invoice, kind: 'invoice_paid' | 'invoice_payment_failed'): Promise<string[]> {
    const owner = await this.customer(m, idOf(invoice.customer));
    if (!owner) return [];
    // Since API version 2025-03-31 an invoice names its subscription under parent.subscription_details.
    const subscriptionId = idOf(invoice.parent?.subscription_details?.subscription);
    await this.sync.addLedgerEntry(m, {
      tenantId: owner.tenantId,
      productKey: owner.productKey,
      kind,
      stripeObjectId: invoice.id as string,
      stripeSubscriptionId: subscriptionId,
      amount: kind === 'invoice_paid' ? invoice.amount_paid : invoice.amount_due,
      currency: invoice.currency,
      credits: 0,
      occurredAt: new Date(invoice.created * 1000),
    });
    return subscriptionId ? this.syncSubscription(m, subscriptionId) : [owner.tenantId];
  }
}
