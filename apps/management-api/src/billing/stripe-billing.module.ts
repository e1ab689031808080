import { type DynamicModule, Module } from '@nestjs/common';
import { BillingRepository, type SecretReader, SqlBillingRepository, StripeApi } from '@flagship/billing';
import type { ManagementApiConfig } from '../env.schema';
import { CheckoutLimit } from './checkout-limit';
import { CheckoutService } from './checkout.service';
import { PortalService } from './portal.service';
import { StripeBillingController } from './stripe-billing.controller';
import { STRIPE_BILLING_OPTIONS, type StripeBillingOptions } from './stripe-billing.options';
import { SubscriptionService } from './subscription.service';

/** Stripe checkout, portal and subscription routes; `secrets` holds the Stripe key and price ids. */
@Module({})
export class StripeBillingModule {
  static forConfig(config: ManagementApiConfig, secrets: SecretReader): DynamicModule {
    const options: StripeBillingOptions = {
      stripe: new StripeApi(secrets, { apiBase: config.STRIPE_API_BASE, timeoutMs: config.STRIPE_TIMEOUT_MS, maxNetworkRetries: config.STRIPE_MAX_NETWORK_RETRIES }),
      secrets,
      productKeys: [config.PRODUCT_KEY_OWN, ...config.internalProductKeys],
      currency: config.BILLING_CURRENCY,
    };
    return {
      module: StripeBillingModule,
      controllers: [StripeBillingController],
      providers: [{ provide: STRIPE_BILLING_OPTIONS, useValue: options }, { provide: BillingRepository, useClass: SqlBillingRepository }, CheckoutLimit, CheckoutService, PortalService, SubscriptionService],
    };
  }
}
