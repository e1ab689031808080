import type { HttpTransport } from '../http-transport';
import type { RequestOptions } from '../sdk.types';

export type PlanId = 'free' | 'standard' | 'premium';

/** The tenant's plan subscription, as billing last synced it from Stripe. */
export interface Subscription {
  /** The Stripe subscription id; null while the tenant has none (the free plan). */
  id: string | null;
  plan: PlanId;
  /** Stripe's status: `active`, `trialing`, `past_due`, `canceled`... */
  status: string;
  currentPeriodStart: string | null;
  currentPeriodEnd: string | null;
  cancelAtPeriodEnd: boolean;
  productKey: string;
}

export interface CheckoutUrls {
  /** Where Stripe sends the browser after paying / confirming. */
  successUrl: string;
  /** Where Stripe sends the browser when the customer backs out. */
  cancelUrl: string;
}

/** A hosted Stripe page (Checkout, or the customer portal) to send the browser to. */
export interface BillingSession {
  url: string;
}

/** `/api/billing/checkout`, `/api/billing/portal`, `/api/billing/subscription` (tenant admins, user tokens). */
export class SubscriptionResource {
  constructor(private readonly http: HttpTransport) {}

  async get(options?: RequestOptions): Promise<Subscription> {
    return (await this.http.request<Subscription>({ method: 'GET', path: '/api/billing/subscription', options })).body;
  }

  /**
   * Starts a plan change: Stripe Checkout for a tenant without a live subscription, otherwise a
   * customer-portal page confirming the switch of the subscription to `planId`. The plan changes when
   * Stripe confirms it (billing-worker applies the webhook), not when this returns.
   */
  async checkout(planId: PlanId, urls: CheckoutUrls, options?: RequestOptions): Promise<BillingSession> {
    return (await this.http.request<BillingSession>({ method: 'POST', path: '/api/billing/checkout', body: { type: 'subscription', planId, ...urls }, options })).body;
  }

  /** A one-time purchase of AI gateway credits; `amountCents` is the price paid (at least 50). */
  async buyCredits(amountCents: number, urls: CheckoutUrls, options?: RequestOptions): Promise<BillingSession> {
    return (await this.http.request<BillingSession>({ method: 'POST', path: '/api/billing/checkout', body: { type: 'credits', amount: amountCents, ...urls }, options })).body;
  }

  /** The Stripe customer portal for the tenant's customer of `productKey` (default `core`). */
  async portal(returnUrl: string, productKey?: string, options?: RequestOptions): Promise<BillingSession> {
    return (await this.http.request<BillingSession>({ method: 'POST', path: '/api/billing/portal', body: { returnUrl, ...(productKey ? { productKey } : {}) }, options })).body;
  }
}
