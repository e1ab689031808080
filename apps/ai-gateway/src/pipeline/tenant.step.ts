import { Logger } from '@nestjs/common';
import { isUuid } from '@flagship/domain';
import { CHANNELS, type PubSub } from '@flagship/redis';
import type { ClientPrincipal } from '@flagship/oauth';
import { dependencyDown, GatewayError } from '../gateway.errors';
import type { TenantContext, TenantContextRepository } from '../tenants/tenant-context.repository';

interface Cached {
  value: Promise<TenantContext | undefined>;
  until: number;
}

/**
 * Step 3: the tenant the token is bound to, with its plan, switches and entitlements. Cached in
 * memory (a Postgres round trip per request would be most of the gateway's own time); management-api
 * and billing-worker publish `CHANNELS.tenantChanged` ({tenantId}) whenever they change entitlements,
 * credits, zeroRated or hostedProviderAllowed, which drops the entry at once; `ttlMs` bounds the
 * staleness should a message be lost, and a reconnect of the subscriber drops everything.
 */
export class TenantStep {
  private readonly logger = new Logger('TenantStep');
  private readonly cache = new Map<string, Cached>();

  constructor(
    private readonly repository: TenantContextRepository,
    private readonly ttlMs: number,
  ) {}

  /** Subscribes to invalidations; returns the unsubscribe. */
  async listen(pubsub: PubSub): Promise<() => Promise<void>> {
    pubsub.onReconnect(() => this.cache.clear());
    return pubsub.subscribe(CHANNELS.tenantChanged, (message) => {
      const tenantId = typeof message === 'object' && message !== null ? (message as { tenantId?: unknown }).tenantId : undefined;
      if (typeof tenantId === 'string') this.cache.delete(tenantId);
      else this.cache.clear();
    });
  }

  async resolve(principal: ClientPrincipal): Promise<TenantContext> {
    const now = Date.now();
    let hit = this.cache.get(principal.tenantId);
    if (hit === undefined || hit.until <= now) {
      const value = isUuid(principal.tenantId) ? this.repository.find(principal.tenantId) : Promise.resolve(undefined);
      hit = { value, until: now + this.ttlMs };
      this.cache.set(principal.tenantId, hit);
      // A failed load is not kept: the next request tries again.
      value.catch(() => {
        if (this.cache.get(principal.tenantId) === hit) this.cache.delete(principal.tenantId);
      });
    }
    let tenant: TenantContext | undefined;
    try {
      tenant = await hit.value;
    } catch (err) {
      this.logger.warn({ err }, 'cannot load the tenant');
      throw dependencyDown('Postgres');
    }
    if (tenant === undefined) throw new GatewayError(401, 'invalid_token', "The access token's tenant does not exist.", null, { 'www-authenticate': 'Bearer' });
    return tenant;
  }
}
