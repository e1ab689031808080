import type { HttpTransport } from '../http-transport';
import type { PageQuery, RequestOptions } from '../sdk.types';

/** A tenant's AI credits, in micro-credits (1 credit = 1,000,000). */
export interface CreditBalance {
  balance: number;
  /** Held by AI gateway requests in flight; released when they complete. */
  reserved: number;
}

/** The tenant's low-balance alert; micro-credits. */
export interface LowBalanceAlert {
  /** Null when no threshold is set. */
  threshold: number | null;
  /** Whether the next fall to or below the threshold will be recorded (false once it was, until the balance is back above it). */
  armed: boolean;
  /** The balance is at or below the threshold now. */
  below: boolean;
  balance: number;
}

/** A recorded crossing: a gateway settlement took the balance from above `threshold` to `balance`. */
export interface LowBalanceCrossing {
  id: string;
  threshold: number;
  balance: number;
  crossedAt: string;
}

/** What a budget caps: one OAuth client's requests, or those sent with one product key (`x-service-product-key`). */
export type BudgetKind = 'client' | 'product';

/** A monthly AI budget (micro-credits) and this UTC month's figures under it. */
export interface Budget {
  kind: BudgetKind;
  /** The OAuth client id, or the product key. */
  id: string;
  monthlyCapMicroCredits: number;
  /** Debited this month by its client's or product key's completed requests (from the month's start, also before the budget was set). */
  spentMicroCredits: number;
  /** Held now by its requests in flight. */
  reservedMicroCredits: number;
  /** `YYYY-MM`, UTC. */
  month: string;
  createdAt: string;
  updatedAt: string;
}

/** `/api/billing`. */
export class BillingResource {
  constructor(private readonly http: HttpTransport) {}

  /** The tenant's AI credit balance (any member; user tokens only). */
  async credits(options?: RequestOptions): Promise<CreditBalance> {
    return (await this.http.request<CreditBalance>({ method: 'GET', path: '/api/billing/credits', options })).body;
  }

  /** The low-balance threshold and whether the balance is below it (tenant admins). */
  async lowBalanceAlert(options?: RequestOptions): Promise<LowBalanceAlert> {
    return (await this.http.request<LowBalanceAlert>({ method: 'GET', path: '/api/billing/low-balance-alert', options })).body;
  }

  /** Sets the threshold (micro-credits); each fall of the balance to or below it is recorded once and published. */
  async setLowBalanceAlert(threshold: number, options?: RequestOptions): Promise<LowBalanceAlert> {
    return (await this.http.request<LowBalanceAlert>({ method: 'PUT', path: '/api/billing/low-balance-alert', body: { threshold }, options })).body;
  }

  /** Removes the threshold; its recorded crossings stay. */
  async removeLowBalanceAlert(options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: '/api/billing/low-balance-alert', options });
  }

  /** One page of the tenant's budgets, oldest first (tenant admins). */
  async budgets(query: PageQuery = {}, options?: RequestOptions): Promise<Budget[]> {
    return (await this.http.request<Budget[]>({ method: 'GET', path: '/api/billing/budgets', query: { limit: query.limit, cursor: query.cursor }, options })).body;
  }

  /**
   * Sets (or changes) the monthly cap of a client's or a product key's budget; the gateway then refuses
   * a request the month's budget does not cover with 402 `budget_exceeded`. 404 for a client not in
   * the tenant or an unknown product key; 409 `quota-exceeded` past the tenant's number of budgets.
   */
  async setBudget(kind: BudgetKind, id: string, monthlyCapMicroCredits: number, options?: RequestOptions): Promise<Budget> {
    return (await this.http.request<Budget>({ method: 'PUT', path: `/api/billing/budgets/${kind}/${encodeURIComponent(id)}`, body: { monthlyCapMicroCredits }, options })).body;
  }

  /** Removes a budget (404 when there is none); its requests are no longer limited. */
  async removeBudget(kind: BudgetKind, id: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: `/api/billing/budgets/${kind}/${encodeURIComponent(id)}`, options });
  }

  /** One page of recorded crossings, newest first. */
  async lowBalanceCrossings(query: PageQuery = {}, options?: RequestOptions): Promise<LowBalanceCrossing[]> {
    return (await this.http.request<LowBalanceCrossing[]>({ method: 'GET', path: '/api/billing/low-balance-alert/crossings', query: { limit: query.limit, cursor: query.cursor }, options })).body;
  }
}
