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
