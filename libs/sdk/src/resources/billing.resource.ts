import type { HttpTransport } from '../http-transport';
import type { RequestOptions } from '../sdk.types';

/** A tenant's AI credits, in micro-credits (1 credit = 1,000,000). */
export interface CreditBalance {
  balance: number;
  /** Held by AI gateway requests in flight; released when they complete. */
  reserved: number;
}

/** `/api/billing`. */
export class BillingResource {
  constructor(private readonly http: HttpTransport) {}

  /** The tenant's AI credit balance (any member; user tokens only). */
  async credits(options?: RequestOptions): Promise<CreditBalance> {
    return (await this.http.request<CreditBalance>({ method: 'GET', path: '/api/billing/credits', options })).body;
  }
}
