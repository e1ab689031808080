import { Registry } from 'prom-client';
import { FakeBillingRepository, type SecretReader } from '@flagship/billing';
import type { CreditGrant, CreditsRepository } from '@flagship/ledger';
import type { Tx } from '@flagship/persistence';
import type { HttpMetrics } from '@flagship/service-kit';
import { BillingMetrics } from '../billing.metrics';
import { UsagePricingService } from '../metering/usage-pricing.service';
import { FakeBillingSyncRepository } from '../webhooks/billing-sync.repository.fake';
import { BillingSyncService } from '../webhooks/billing-sync.service';
import { FakeCreditPurchasesRepository } from '../webhooks/credit-purchases.repository.fake';
import { CreditReversalsService } from '../webhooks/credit-reversals.service';
import { FakeStripeAccount } from './stripe-account.fake';

/** Micro-credits per cent (BILLING_MICRO_CREDITS_PER_CENT's default). */
export const MICRO_CREDITS_PER_CENT = 10_000;

/** Records the credits granted (the ledger's CreditsRepository, as far as billing-worker uses it). */
export class RecordingCredits implements Pick<CreditsRepository, 'grantCredits'> {
  readonly grants: Array<{ tenantId: string } & CreditGrant> = [];
  readonly balances = new Map<string, number>();

  async grantCredits(_m: Tx, tenantId: string, grant: CreditGrant): Promise<{ balance: number; reserved: number }> {
    this.grants.push({ tenantId, ...grant });
    const balance = (this.balances.get(tenantId) ?? 0) + grant.amount;
    this.balances.set(tenantId, balance);
    return { balance, reserved: 0 };
  }
}

/**
 * billing-worker's billing side built from in-memory fakes, no I/O: the Stripe account (with the
 * operator's three plan prices), the repositories, and the services over them as the app wires
 * them. For the unit specs of the billing sync, the webhook inbox and the metering.
 */
export function billingWorld(config: { meterEventName?: string; meterPrice?: string } = {}) {
  const stripe = new FakeStripeAccount();
  const plans = {
    free: stripe.addPrice({ currency: 'usd', unit_amount: 0, recurring: { interval: 'month' } }),
    standard: stripe.addPrice({ currency: 'usd', unit_amount: 1900, recurring: { interval: 'month' } }),
    premium: stripe.addPrice({ currency: 'usd', unit_amount: 4900, recurring: { interval: 'month' } }),
  };
  const secretValues: Record<string, string> = { STRIPE_PRICE_FREE: plans.free.id, STRIPE_PRICE_STANDARD: plans.standard.id, STRIPE_PRICE_PREMIUM: plans.premium.id };
  const secrets: SecretReader = { get: (name) => secretValues[name] };
  const billing = new FakeBillingRepository();
  const sync = new FakeBillingSyncRepository();
  const purchases = new FakeCreditPurchasesRepository();
  const credits = new RecordingCredits();
  const meterConfig = { METER_EVENT_NAME: config.meterEventName ?? 'flagship_ai_usage', METER_PRICE_CURRENCY: 'usd', METER_PRICE_UNIT_AMOUNT_DECIMAL: config.meterPrice ?? '0.0001' };
  const pricing = new UsagePricingService(stripe, meterConfig, billing, sync);
  const reversals = new CreditReversalsService(purchases);
  const service = new BillingSyncService(stripe, secrets, { BILLING_MICRO_CREDITS_PER_CENT: MICRO_CREDITS_PER_CENT }, billing, sync, credits, pricing, reversals);
  const registry = new Registry();
  const metrics = new BillingMetrics({ registry } as HttpMetrics);

  /** A tenant as sign-up leaves it (plan free) with its Stripe customer for a product key. */
  const tenantWithCustomer = async (tenantId: string, productKey = 'core') => {
    sync.seedTenant(tenantId);
    const customer = stripe.addCustomer({ name: 'Acme', metadata: { tenantId, productKey } });
    await billing.insertCustomer(tenantId, productKey, customer.id);
    return customer.id;
  };

  return { stripe, plans, secrets, billing, sync, purchases, credits, pricing, reversals, service, meterConfig, registry, metrics, tenantWithCustomer };
}
export type BillingWorld = ReturnType<typeof billingWorld>;
