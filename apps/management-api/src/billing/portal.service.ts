import { Inject, Injectable, Logger } from '@nestjs/common';
import { BILLING_STATE, BillingRepository, ensureStripeCustomer, PLAN_PRODUCT_KEY, scopedIdempotencyKey } from '@flagship/billing';
import type { TenantEntity } from '@flagship/persistence';
import { validationProblem } from '@flagship/problem-details';
import type { BillingSessionDto } from './checkout.dto';
import type { PortalDto } from './portal.dto';
import { STRIPE_BILLING_OPTIONS, type StripeBillingOptions } from './stripe-billing.options';
import { stripeProblem } from './stripe-billing.errors';

/** `POST /api/billing/portal`: a Stripe customer-portal session for the tenant's customer of one product key. */
@Injectable()
export class PortalService {
  private readonly log = new Logger(PortalService.name);

  constructor(
    @Inject(STRIPE_BILLING_OPTIONS) private readonly options: StripeBillingOptions,
    private readonly billing: BillingRepository,
  ) {}

  async portal(tenant: TenantEntity, dto: PortalDto, idempotencyKey?: string): Promise<BillingSessionDto> {
    const productKey = dto.productKey ?? PLAN_PRODUCT_KEY;
    if (!this.options.productKeys.includes(productKey)) throw validationProblem({ productKey: `must be one of ${this.options.productKeys.join(', ')}` });
    try {
      const stripe = this.options.stripe.client();
      const customer = await ensureStripeCustomer(stripe, this.billing, tenant, productKey);
      const configuration = (await this.billing.state(BILLING_STATE.portalConfigurationId)) ?? undefined;
      const session = await stripe.billingPortal.sessions.create(
        { customer: customer.stripeCustomerId, return_url: dto.returnUrl, ...(configuration ? { configuration } : {}) },
        scopedIdempotencyKey(`flagship-portal-${tenant.id}`, idempotencyKey),
      );
      return { url: session.url };
    } catch (err) {
      throw stripeProblem(err, (m) => this.log.warn(m));
    }
  }
}
