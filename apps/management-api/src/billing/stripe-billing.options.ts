import type { SecretReader, StripeApi } from '@flagship/billing';

export const STRIPE_BILLING_OPTIONS = Symbol('STRIPE_BILLING_OPTIONS');

export interface StripeBillingOptions {
  stripe: StripeApi;
  /** Where price ids are read (SecretStore: re-read, so a rotation needs no restart). */
  secrets: SecretReader;
  /** Product keys a portal session may be scoped to (the own and the internal ones). */
  productKeys: readonly string[];
  currency: string;
}
