import type Stripe from 'stripe';
import type { BillingCustomer, BillingRepository } from './billing.repository';

/** What ensureStripeCustomer asks of Stripe: the SDK client has it, and so has billing-worker's StripeAccount port. */
export interface StripeCustomerCreator {
  customers: { create(params: Stripe.CustomerCreateParams, options: { idempotencyKey: string }): Promise<{ id: string }> };
}

/**
 * The tenant's Stripe customer for a product key, created on first need. Both apps create through
 * this with the same idempotency key, so racing creators get one Stripe customer; the database's
 * primary key keeps one row. Its e-mail is one a member proved (BillingRepository.billingEmail),
 * never the tenant's typed-in `primaryEmail` as such: Stripe mails receipts and invoices there.
 */
export async function ensureStripeCustomer(stripe: StripeCustomerCreator, repo: BillingRepository, tenant: { id: string; name: string }, productKey: string): Promise<BillingCustomer> {
  const existing = await repo.customer(tenant.id, productKey);
  if (existing) return existing;
  // Chosen the same way by every creator: Stripe refuses an idempotency key sent again with other parameters.
  const email = await repo.billingEmail(tenant.id);
  const customer = await stripe.customers.create(
    { name: tenant.name, ...(email ? { email } : {}), metadata: { tenantId: tenant.id, productKey } },
    { idempotencyKey: `flagship-customer-${tenant.id}-${productKey}` },
  );
  return repo.insertCustomer(tenant.id, productKey, customer.id);
}
