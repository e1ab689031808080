import { Logger } from '@nestjs/common';
import { isUuid } from '@flagship/domain';
import { CHANNELS, type PubSub, SubscribedCache, type SubscribedCacheStatus } from '@flagship/redis';
import type { ClientPrincipal } from '@flagship/oauth';
import { dependencyDown, GatewayError } from '../gateway.errors';
import type { TenantContext, TenantContextRepository } from '../tenants/tenant-context.repository';

const unknownTenant = () => new GatewayError(401, 'invalid_token', "The access token's tenant does not exist.", null, { 'www-authenticate': 'Bearer' });
/** 403, not 402: buying credits does not lift it; the dispute closing does. */
const paused = () =>
  new GatewayError(
    403,
    'account_paused',
    "This tenant's AI access is paused while a payment dispute of one of its credit purchases is open; it resumes when the dispute closes.",
  );

/**
 * Step 3: the tenant the token is bound to, with its plan, switches and entitlements, held in a
 * SubscribedCache (a Postgres round trip per request would be most of the gateway's own time).
 * management-api and billing-worker announce `CHANNELS.tenantChanged` whenever they change
 * entitlements, credits, zeroRated, hostedProviderAllowed or a dispute's state: the next request
 * reads the tenant again. A tenant with a dispute open is refused here (403 account_paused).
 *
 * - `ttlMs` bounds the life of every value, a tenant that does not exist included (`null`, 401 for
 *   that long unless its creation is announced), should an announcement be lost.
 * - Postgres down: a tenant not held, past its `ttlMs`, or announced as changed is refused with 503
 *   (what the gateway spends is decided by its entitlements and credits: a change announced is never
 *   served stale). Only a value that is merely unconfirmed (the subscriber reconnected, so an
 *   announcement may have been missed) is served through the outage, until its `ttlMs`.
 */
export class TenantStep {
  private readonly logger = new Logger('TenantStep');
  private readonly cache: SubscribedCache<string, TenantContext | null>;

  constructor(repository: TenantContextRepository, ttlMs: number, pubsub: PubSub | undefined) {
    this.cache = new SubscribedCache<string, TenantContext | null>(pubsub, {
      name: 'TenantStep',
      load: async (tenantId) => (await repository.find(tenantId)) ?? null,
      expiresAt: (_tenant, loadedAt) => loadedAt + ttlMs,
      serveStaleOn: (_err, wanted) => wanted === 'reconcile',
    }).follow(CHANNELS.tenantChanged, (message, cache) => cache.invalidate(message.tenantId));
  }

  /** Subscribes without waiting for Redis. */
  start(): this {
    this.cache.start();
    return this;
  }

  close(): void {
    this.cache.close();
  }

  status(): SubscribedCacheStatus {
    return this.cache.status();
  }

  async resolve(principal: ClientPrincipal): Promise<TenantContext> {
    // Not a tenant id at all: nothing to ask Postgres, nothing to hold.
    if (!isUuid(principal.tenantId)) throw unknownTenant();
    let tenant = this.cache.peek(principal.tenantId);
    if (tenant === undefined) {
      try {
        tenant = await this.cache.get(principal.tenantId);
      } catch (err) {
        this.logger.warn({ err }, 'cannot load the tenant');
        throw dependencyDown('Postgres');
      }
    }
    if (tenant === null) throw unknownTenant();
    if (tenant.paused) throw paused();
    return tenant;
  }
}
