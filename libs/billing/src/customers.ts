import type Stripe from 'stripe';
import type { BillingCustomer, BillingRepository } from './billing.repository';

/**
 * The tenant's Stripe customer for a product key, created on first need. Both apps create through
 * this with the same idempotency key, so racing creators get one Stripe customer; the database's
 * primary key keeps one row.
 */
export async function ensureStripeCustomer(
  stripe: Stripe,
  repo: BillingRepository,
  tenant: { id: string; name: string; primaryEmail: string },
  productKey: string,
): Promise<BillingCustomer> {
  const existing = await repo.customer(tenant.id, productKey);
  if (existing) return existing;
  const customer = await stripe.customers.create(
    { name: tenant.name, email: tenant.primaryEmail, metadata: { tenantId: tenant.id, productKey } },
    { idempotencyKey: `flagship-customer-${tenant.id}-${productKey}` },
  );
  return repo.insertCustomer(tenant.id, productKey, customer.id);
}
