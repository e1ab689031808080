import { Inject, Injectable, Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import {
  BILLING_STATE,
  BillingRepository,
  ensureStripeCustomer,
  LIVE_SUBSCRIPTION_STATUSES,
  PLAN_PRODUCT_KEY,
  planPriceId,
  type RecordedCheckoutSession,
  scopedIdempotencyKey,
} from '@flagship/billing';
import type { TenantEntity } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { BillingSessionDto, CheckoutDto } from './checkout.dto';
import { CheckoutLimit } from './checkout-limit';
import { STRIPE_BILLING_OPTIONS, type StripeBillingOptions } from './stripe-billing.options';
import { STRIPE_RETRY_AFTER_S, StripeBillingProblems, stripeProblem } from './stripe-billing.errors';

/**
 * `POST /api/billing/checkout`. A tenant without a live plan subscription gets a Stripe Checkout
 * session (subscription mode); one with a live subscription gets a portal session whose
 * `subscription_update_confirm` flow switches its single item to the chosen plan's price (the
 * seed's rule 1). Credits are a Checkout session in payment mode. billing-worker applies the results
 * when Stripe's webhooks arrive; nothing here changes the tenant's plan. A tenant starts at most
 * CHECKOUT_SESSIONS_PER_HOUR of them (CheckoutLimit).
 */
@Injectable()
export class CheckoutService {
  private readonly log = new Logger(CheckoutService.name);

  constructor(
    @Inject(STRIPE_BILLING_OPTIONS) private readonly options: StripeBillingOptions,
    private readonly billing: BillingRepository,
    private readonly limit: CheckoutLimit,
  ) {}

  async checkout(tenant: TenantEntity, dto: CheckoutDto, idempotencyKey?: string, actorUserId: string | null = null): Promise<BillingSessionDto> {
    // The caller's key, scoped to the tenant and the operation (Stripe's keys are account-wide).
    const stripeKey = scopedIdempotencyKey(`flagship-checkout-${tenant.id}`, idempotencyKey);
    // Before anything reaches Stripe: a tenant over its hourly budget makes no Stripe object at all.
    await this.limit.admit(tenant.id);
    try {
      const stripe = this.options.stripe.client();
      const customer = await ensureStripeCustomer(stripe, this.billing, tenant, PLAN_PRODUCT_KEY);
      if (dto.type === 'credits') return { url: await this.creditsSession(stripe, tenant, customer.stripeCustomerId, dto, stripeKey, actorUserId) };
      const plan = dto.planId as NonNullable<CheckoutDto['planId']>;
      const priceId = planPriceId(this.options.secrets, plan);
      if (!priceId) {
        throw new ProblemException(StripeBillingProblems['plan-not-configured'], `The ${plan} plan has no Stripe price configured.`, {}, { 'Retry-After': String(STRIPE_RETRY_AFTER_S * 12) });
      }
      const current = await this.billing.currentSubscription(tenant.id, PLAN_PRODUCT_KEY);
      const live = current && (LIVE_SUBSCRIPTION_STATUSES as readonly string[]).includes(current.status) && current.stripeItemId;
      if (!current || !live) {
        const session = await stripe.checkout.sessions.create(
          {
            mode: 'subscription',
            customer: customer.stripeCustomerId,
            client_reference_id: tenant.id,
            line_items: [{ price: priceId, quantity: 1 }],
            // The free plan's price is 0: no card asked for it; paid plans still collect one.
            payment_method_collection: 'if_required',
            success_url: dto.successUrl,
            cancel_url: dto.cancelUrl,
            metadata: { tenantId: tenant.id, productKey: PLAN_PRODUCT_KEY, kind: 'subscription', planId: plan },
            subscription_data: { metadata: { tenantId: tenant.id, productKey: PLAN_PRODUCT_KEY, planId: plan } },
          },
          stripeKey,
        );
        await this.record(session, tenant, { kind: 'subscription', amount: null, currency: null, planId: plan }, actorUserId);
        return { url: session.url as string };
      }
      if (current.priceId === priceId) {
        throw new ProblemException(StripeBillingProblems['already-on-plan'], `The tenant is already subscribed to the ${plan} plan.`);
      }
      const configuration = (await this.billing.state(BILLING_STATE.portalConfigurationId)) ?? undefined;
      const portal = await stripe.billingPortal.sessions.create(
        {
          customer: current.stripeCustomerId,
          ...(configuration ? { configuration } : {}),
          return_url: dto.cancelUrl,
          flow_data: {
            type: 'subscription_update_confirm',
            subscription_update_confirm: { subscription: current.stripeSubscriptionId, items: [{ id: current.stripeItemId as string, price: priceId, quantity: 1 }] },
            after_completion: { type: 'redirect', redirect: { return_url: dto.successUrl } },
          },
        },
        stripeKey,
      );
      return { url: portal.url };
    } catch (err) {
      throw stripeProblem(err, (m) => this.log.warn(m));
    }
  }

  private async creditsSession(
    stripe: Stripe,
    tenant: TenantEntity,
    customerId: string,
    dto: CheckoutDto,
    stripeKey: { idempotencyKey?: string },
    actorUserId: string | null,
  ): Promise<string> {
    const amount = dto.amount as number;
    const session = await stripe.checkout.sessions.create(
      {
        mode: 'payment',
        customer: customerId,
        client_reference_id: tenant.id,
        line_items: [{ price_data: { currency: this.options.currency, unit_amount: amount, product_data: { name: 'Flagship AI gateway credits' } }, quantity: 1 }],
        success_url: dto.successUrl,
        cancel_url: dto.cancelUrl,
        metadata: { tenantId: tenant.id, productKey: PLAN_PRODUCT_KEY, kind: 'credits' },
      },
      stripeKey,
    );
    await this.record(session, tenant, { kind: 'credits', amount, currency: this.options.currency, planId: null }, actorUserId);
    return session.url as string;
  }

  /**
   * billing-worker grants only for sessions recorded here, up to the amount recorded. Recorded before
   * the URL is handed out: a session that could not be recorded is never paid.
   */
  private async record(
    session: Stripe.Checkout.Session,
    tenant: TenantEntity,
    what: Pick<RecordedCheckoutSession, 'kind' | 'amount' | 'currency' | 'planId'>,
    actorUserId: string | null,
  ): Promise<void> {
    await this.billing.recordCheckoutSession({ stripeSessionId: session.id, tenantId: tenant.id, productKey: PLAN_PRODUCT_KEY, createdBy: actorUserId, ...what });
  }
}
