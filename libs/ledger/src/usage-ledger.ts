import type { LowBalanceCrossing } from './low-balance.repository';

/**
 * One request's reservation and `pending` row. The gateway narrows `provider` and `endpoint` to its
 * own key types; the ledger stores them as text.
 */
export interface Reservation<ProviderKey extends string = string, Endpoint extends string = string> {
  /** The ledger row's id, chosen by the gateway. */
  id: string;
  tenantId: string;
  clientId: string;
  productKey: string;
  /** The provider asked for (the row's `provider` until settled, and its `requested_provider`). */
  provider: ProviderKey;
  model: string;
  endpoint: Endpoint;
  stream: boolean;
  /** Micro-credits held while pending (0 when zero-rated). */
  estimate: number;
  zeroRatedReason: string | null;
  requestId: string;
  /**
   * The prices the request is admitted at (micro-credits per 1,000 tokens), recorded on its row when
   * it is reserved: the estimate is computed from them, and the settlement's debit must be too, so a
   * row's prices are the ones it was charged at (and an abandoned row's, settled at its estimate,
   * have them as well). `cachedInputPer1k`: null when the model has no cached-input price.
   */
  inputPer1k: number;
  outputPer1k: number;
  cachedInputPer1k: number | null;
  /**
   * The caller's own `x-request-id` when it is a sane token (service-kit's clientRequestIdOf: 1 to 128
   * of A-Z a-z 0-9 . _ : -), so it can match its request to the row; absent or null: none sent.
   */
  clientRequestId?: string | null;
  /** The flag that chose the model when the request's route is bound to one (CONTRACT.md section 11); absent or null: unbound. */
  route?: RouteAttribution | null;
}

/**
 * What a bound route's flag decided for one request, recorded on its row: the flag's key and version,
 * the variation served (null when the flag could not be used: `reason` says why, and the request went
 * to the model it asked for) and the kind of context evaluated. `reason` is also set when the variation
 * served is not the one evaluated (`spend_cap`: the control, past the evaluated variation's cap).
 */
export interface RouteAttribution {
  flagKey: string;
  flagVersion: number | null;
  variation: string | null;
  contextKind: string;
  reason: string | null;
}

/** One request's outcome. */
export interface Settlement<ProviderKey extends string = string> {
  id: string;
  tenantId: string;
  status: 'succeeded' | 'failed';
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, those the provider reported as cached (0 when it said nothing). */
  cachedTokens: number;
  /** Micro-credits; forced to 0 on a zero-rated row. */
  debit: number;
  provider: ProviderKey;
  latencyMs: number;
  usageEstimated: boolean;
  errorCode: string | null;
  /** A stream's time from the provider call to its first event (ms); absent for answers that are not streams. */
  firstTokenMs?: number | null;
}

/**
 * What admission said of one reservation. `budget_client` / `budget_product`: the credit covered it but
 * this month's budget of its OAuth client / product key did not. `unavailable`: its statement failed
 * after others of its batch were admitted (answer it as Postgres being down; nothing was held for it).
 */
export type ReserveOutcome = 'admitted' | 'insufficient_credits' | 'budget_client' | 'budget_product' | 'unavailable';

/** What admission under a variation's spend cap said: as admit's, or `spend_cap` (nothing held: the variation's month would pass its cap). */
export type CappedOutcome = ReserveOutcome | 'spend_cap';

/** Rows named by tenant and id, as release and the "upstream called" stamp take them. */
export type LedgerRowRef = Pick<Reservation, 'id' | 'tenantId'>;

/**
 * The gateway's ledger: credit reserved per request, rows written pending, settled or released. The
 * port its steps depend on; UsageLedgerRepository is Postgres, the in-memory twin is in
 * `@flagship/ledger/testing`, and usage-ledger.agreement.int-spec.ts holds both to the same cases.
 */
export abstract class UsageLedger {
  /**
   * For each reservation, in order: admitted (row written, credit and budgets held), or why not. Throws
   * when nothing was reserved; when a later statement fails after others of the batch were admitted,
   * those it was for are `unavailable`.
   */
  abstract admit(batch: readonly Reservation[]): Promise<ReserveOutcome[]>;

  /**
   * One billable reservation of a flag variation (`r.route.variation`) under that variation's monthly
   * spend cap (micro-credits, UTC month, the budgets' units) on its product key: admitted only while
   * what the variation's rows of the month debited (completed) and hold (pending) leaves room for its
   * estimate, decided one at a time per variation across replicas, so the month never passes the cap.
   */
  abstract admitUnderCap(r: Reservation, monthlyCap: number): Promise<CappedOutcome>;

  /** For each settlement, in order: whether its row was still pending and is now complete; and the low-balance crossings it recorded. */
  abstract settleBatch(batch: readonly Settlement[]): Promise<{ completed: boolean[]; crossings: LowBalanceCrossing[] }>;

  /** For each reservation, in order: whether its row was still pending and is now gone, its estimate released. */
  abstract release(batch: readonly LedgerRowRef[]): Promise<boolean[]>;

  /** Stamps "upstream called" on each row still pending; resolves once the stamps are committed. */
  abstract markUpstreamCalled(batch: readonly LedgerRowRef[]): Promise<void>;

  /** Resolves once everything committed before the call is on disk (durable connections), at once otherwise. */
  abstract flushBarrier(): Promise<void>;

  /** For each reservation, in order: whether it was admitted. */
  async reserve(batch: readonly Reservation[]): Promise<boolean[]> {
    return (await this.admit(batch)).map((o) => o === 'admitted');
  }

  /** For each settlement, in order: whether its row was still pending and is now complete. */
  async settle(batch: readonly Settlement[]): Promise<boolean[]> {
    return (await this.settleBatch(batch)).completed;
  }
}
