import { Inject, Injectable, Logger } from '@nestjs/common';
import type Stripe from 'stripe';
import { BILLING_STATE, BillingRepository, planPrices, type SecretReader, type StripeApi } from '@flagship/billing';
import { BILLING_SECRETS, STRIPE_API } from './stripe.tokens';

/**
 * Keeps the customer-portal configuration allowing a switch to every plan price (the seed's rule
 * 2): a `subscription_update_confirm` flow for a price the configuration does not list is refused by
 * Stripe. Stripe also requires `payment_method_update` for `subscription_update`.
 */
@Injectable()
export class PortalConfigurationService {
  private readonly log = new Logger(PortalConfigurationService.name);

  constructor(
    @Inject(STRIPE_API) private readonly stripe: StripeApi,
    @Inject(BILLING_SECRETS) private readonly secrets: SecretReader,
    private readonly billing: BillingRepository,
  ) {}

  /** Answers the configuration id, created or updated as needed; undefined when no plan price is configured. */
  async ensure(): Promise<string | undefined> {
    const prices = planPrices(this.secrets);
    if (prices.length === 0) return undefined;
    const stripe = this.stripe.client();
    const byProduct = new Map<string, string[]>();
    for (const { priceId } of prices) {
      const price = await stripe.prices.retrieve(priceId);
      const product = typeof price.product === 'string' ? price.product : price.product.id;
      byProduct.set(product, [...(byProduct.get(product) ?? []), priceId]);
    }
    const products = [...byProduct].map(([product, list]) => ({ product, prices: list }));
    const features: Stripe.BillingPortal.ConfigurationCreateParams.Features = {
      payment_method_update: { enabled: true },
      invoice_history: { enabled: true },
      subscription_cancel: { enabled: true, mode: 'at_period_end' },
      subscription_update: { enabled: true, default_allowed_updates: ['price'], products, proration_behavior: 'create_prorations' },
    };
    const id = await this.billing.state(BILLING_STATE.portalConfigurationId);
    if (id) {
      const existing = await stripe.billingPortal.configurations.retrieve(id).catch((err: { code?: string }) => {
        if (err.code === 'resource_missing') return null;
        throw err;
      });
      if (existing) {
        if (existing.active && this.allows(existing, products)) return id;
        await stripe.billingPortal.configurations.update(id, { active: true, features });
        this.log.log(`portal configuration ${id} now allows every plan price`);
        return id;
      }
    }
    const created = await stripe.billingPortal.configurations.create(
      { features, metadata: { managedBy: 'flagship-billing-worker' } },
      { idempotencyKey: `flagship-portal-configuration-${products.map((p) => p.prices.join('.')).join('-')}` },
    );
    await this.billing.setState(BILLING_STATE.portalConfigurationId, created.id);
    this.log.log(`portal configuration ${created.id} created`);
    return created.id;
  }

  private allows(c: Stripe.BillingPortal.Configuration, wanted: Array<{ product: string; prices: string[] }>): boolean {
    const su = c.features.subscription_update;
    if (!su.enabled || !c.features.payment_method_update.enabled) return false;
    const listed = new Set((su.products ?? []).flatMap((p) => p.prices));
    return wanted.every((w) => w.prices.every((p) => listed.has(p)));
  }
}
