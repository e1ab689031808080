/** The worker's StripeApi (client for the current key). */
export const STRIPE_API = Symbol('STRIPE_API');
/** The worker's SecretStore: Stripe key, webhook secrets, price ids. */
export const BILLING_SECRETS = Symbol('BILLING_SECRETS');
