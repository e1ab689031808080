/**
 * The change feed: every channel the apps publish on, each with its one payload type and the
 * runtime check of it, defined once here and used by publishers (PubSub.publish takes a payload of
 * the channel's type) and subscribers alike (PubSub.subscribe hands over only payloads that passed
 * the check). A message that fails the check (another version of the app, a hand-typed PUBLISH) is
 * dropped and counted by the subscriber, never half-read.
 */
export interface Channel<T> {
  /** The channel's name, before RedisKeys' prefix. */
  readonly name: string;
  /** The payload when `message` (parsed JSON) is one of this channel's, else undefined. */
  readonly check: (message: unknown) => T | undefined;
}

function defineChannel<T>(name: string, check: (message: Record<string, unknown>) => T | undefined): Channel<T> {
  return {
    name,
    check: (message) => (typeof message === 'object' && message !== null && !Array.isArray(message) ? check(message as Record<string, unknown>) : undefined),
  };
}

const isText = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isOptionalText = (v: unknown): v is string | undefined => v === undefined || isText(v);

/**
 * A flag changed in one environment: management-api's FlagEvents sends one message per environment a
 * committed write touched (a change to a flag's global fields names every environment), always with
 * `environment`, `flagKey` and `version`. Flag stores re-read the row and do not read `version`. They
 * also accept `environment` absent (that flag in every environment) and `flagKey` absent (every flag),
 * which nothing in the project sends: an operator's hand-typed PUBLISH may.
 */
export interface FlagChanged {
  tenantId: string;
  environment?: string;
  flagKey?: string;
  /**
   * A segment changed (no `flagKey`): any flag of the environment may use it, so a store that does
   * not know which re-reads the whole environment, as for a message without `flagKey`.
   */
  segmentKey?: string;
  version?: number;
}

/** An OAuth client was deleted or its secret rotated; `revokedAt` (ms) is when, else the moment heard. */
export interface ClientRevoked {
  clientId: string;
  revokedAt?: number;
}

/** What is cached of a tenant changed (entitlements, plan, zeroRated, hostedProviderAllowed, credits). */
export interface TenantChanged {
  tenantId: string;
}

/** A person's membership of a tenant was added, removed or its role changed. */
export interface MembershipChanged {
  tenantId: string;
  userId: string;
}

/** The OAuth signing keys changed (a rotation); `kid` is the new key's, when known. */
export interface SigningKeysChanged {
  kid?: string;
}

/**
 * A tenant's balance crossed its low-balance threshold (from above to at or below it): published by the
 * AI gateway after the settlement recording the crossing commits, and by billing-worker's reconciler
 * after the charge recording it commits (the durable record is Postgres'
 * low_balance_crossings row `crossingId`, so a subscriber that missed the message can read it there).
 * Micro-credits; `crossedAt` ISO 8601.
 */
export interface LowBalance {
  tenantId: string;
  crossingId: string;
  threshold: number;
  balance: number;
  crossedAt: string;
}

/** A gateway route's binding to a flag (CONTRACT.md section 11) was made, changed or removed. */
export interface GatewayBindingChanged {
  tenantId: string;
  productKey: string;
}

const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

export const CHANNELS = {
  /** management-api publishes after a flag write commits; flag stores re-read that flag. */
  flagChanged: defineChannel<FlagChanged>('flag-changed', (m) => {
    if (!isText(m.tenantId) || !isOptionalText(m.flagKey) || !isOptionalText(m.segmentKey)) return undefined;
    if (m.environment !== undefined && m.environment !== null && !isText(m.environment)) return undefined;
    if (m.version !== undefined && !(typeof m.version === 'number' && Number.isSafeInteger(m.version))) return undefined;
    return {
      tenantId: m.tenantId,
      ...(isText(m.environment) ? { environment: m.environment } : {}),
      ...(isText(m.flagKey) ? { flagKey: m.flagKey } : {}),
      ...(isText(m.segmentKey) ? { segmentKey: m.segmentKey } : {}),
      ...(typeof m.version === 'number' ? { version: m.version } : {}),
    };
  }),
  /** Verifiers refuse the client's tokens issued until `revokedAt` (libs/oauth ClientRevocations). */
  clientRevoked: defineChannel<ClientRevoked>('client-revoked', (m) => {
    if (!isText(m.clientId)) return undefined;
    if (m.revokedAt !== undefined && !(typeof m.revokedAt === 'number' && Number.isFinite(m.revokedAt))) return undefined;
    return { clientId: m.clientId, ...(m.revokedAt !== undefined ? { revokedAt: m.revokedAt } : {}) };
  }),
  /**
   * Published by whoever writes what the AI gateway and the evaluate routes cache of a tenant
   * (management-api's admin routes, billing-worker); they drop their cached copy.
   */
  tenantChanged: defineChannel<TenantChanged>('tenant-changed', (m) => (isText(m.tenantId) ? { tenantId: m.tenantId } : undefined)),
  /** Published by whoever writes memberships; caches of that person's access drop it, so a removal is refused at once. */
  membershipChanged: defineChannel<MembershipChanged>('membership-changed', (m) =>
    isText(m.tenantId) && isText(m.userId) ? { tenantId: m.tenantId, userId: m.userId } : undefined,
  ),
  /** Verifiers re-read the published keys (libs/oauth VerificationKeys). */
  signingKeysChanged: defineChannel<SigningKeysChanged>('oauth-signing-keys-changed', (m) =>
    isOptionalText(m.kid) ? (m.kid !== undefined ? { kid: m.kid } : {}) : undefined,
  ),
  /**
   * Published by the AI gateway and billing-worker's usage reconciler after a crossing commits. Nothing
   * in the project subscribes (there are no outbound webhooks): it is for an operator's own consumers,
   * and the crossings endpoint (Postgres' low_balance_crossings) is the record; see LowBalance.
   */
  lowBalance: defineChannel<LowBalance>('low-balance', (m) =>
    isText(m.tenantId) && isText(m.crossingId) && isInteger(m.threshold) && isInteger(m.balance) && isText(m.crossedAt) && !Number.isNaN(Date.parse(m.crossedAt))
      ? { tenantId: m.tenantId, crossingId: m.crossingId, threshold: m.threshold, balance: m.balance, crossedAt: m.crossedAt }
      : undefined,
  ),
  /** management-api publishes after a binding write commits; gateways re-read that binding. */
  gatewayBindingChanged: defineChannel<GatewayBindingChanged>('gateway-binding-changed', (m) =>
    isText(m.tenantId) && isText(m.productKey) ? { tenantId: m.tenantId, productKey: m.productKey } : undefined,
  ),
} as const;
