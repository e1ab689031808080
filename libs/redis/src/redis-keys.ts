/**
 * Key and channel naming. Every key the apps write goes through one RedisKeys, so one prefix
 * separates deployments (and test files) sharing a Redis server.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  key(...parts: Array<string | number>): string {
    return `${this.prefix}${parts.join(':')}`;
  }

  /** A tenant-owned key: the tenant id is always the first part. */
  tenant(tenantId: string, ...parts: Array<string | number>): string {
    return this.key('t', tenantId, ...parts);
  }

  channel(name: string): string {
    return `${this.prefix}ch:${name}`;
  }
}

/** Channels the apps publish on; messages are JSON. */
export const CHANNELS = {
  /** A flag changed: `{ tenantId, environment, flagKey, version }`. */
  flagChanged: 'flag-changed',
  /** An OAuth client was deleted or its secret rotated: `{ clientId }`. */
  clientRevoked: 'client-revoked',
  /**
   * What the AI gateway caches of a tenant changed (entitlements, plan, zeroRated,
   * hostedProviderAllowed, credits granted): `{ tenantId }`. Published by whoever writes it
   * (management-api's admin routes, billing-worker); the gateway drops its cached copy.
   */
  tenantChanged: 'tenant-changed',
  /**
   * A person's membership of a tenant was added, removed or its role changed: `{ tenantId, userId }`.
   * Published by whoever writes memberships; management-api's replicas drop what they cached of
   * that person's access (the evaluate routes' callers), so a removal is refused at once.
   */
  membershipChanged: 'membership-changed',
} as const;
