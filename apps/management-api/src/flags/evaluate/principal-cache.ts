import type { IncomingMessage } from 'node:http';
import { type PubSub, SubscribedCache, type SubscribedCacheStatus } from '@flagship/redis';
import { followAccessChanges } from '../../auth/access-changes';
import type { TenantAccessRule } from '../../auth/auth.decorators';
import type { TenantAccessResolver, TenantPrincipal } from '../../auth/tenant-access.resolver';

/** Whose access: the request's credentials and the tenant it names. */
interface CallerKey {
  authorization: string | undefined;
  tenantHeader: string | undefined;
}

/**
 * The evaluate route's callers, resolved by the same TenantAccessResolver as the Nest guards and
 * kept in a SubscribedCache per Authorization header and X-Tenant-ID, so a busy client costs the
 * resolver's queries once per `ttlMs` (EVALUATE_CALLER_CACHE_MS), not once per call, and never waits
 * for them: from half its life an entry is resolved again in the background while it is served.
 *
 * - An entry is never served past its token's expiry nor `ttlMs` after it was resolved.
 * - Refusals are never kept, and a refusal (or any failure) of a background refresh drops the entry
 *   (`serveStaleOn: false`): the next request is decided afresh and gets the problem.
 * - Revocation promises a removed member or client is refused within 5 s on every replica; an
 *   announcement does it at once: a client revocation drops that client's entries, a membership
 *   change that person's, a tenant change that tenant's (auth/access-changes.ts); entries still being resolved are dropped
 *   too (their reads may predate the change). `ttlMs` bounds what is never announced (Redis away, a
 *   membership edited outside the app).
 */
export class PrincipalCache {
  private readonly cache: SubscribedCache<CallerKey, TenantPrincipal>;

  constructor(
    private readonly access: TenantAccessResolver,
    private readonly rule: TenantAccessRule,
    ttlMs: number,
    pubsub: PubSub | undefined,
  ) {
    this.cache = new SubscribedCache<CallerKey, TenantPrincipal>(pubsub, {
      name: 'PrincipalCache',
      idOf: (k) => `${k.authorization ?? ''}\n${k.tenantHeader ?? ''}`,
      load: (k) => this.access.resolve(k.authorization, k.tenantHeader, this.rule),
      expiresAt: (p, loadedAt) => Math.min(p.expiresAt, loadedAt + ttlMs),
      reconcileMs: ttlMs / 2,
      serveStaleOn: () => false,
    });
    followAccessChanges((channel, concerns) =>
      this.cache.follow(channel, (m, c) => {
        const concerned = concerns(m);
        c.deleteWhere((_key, p) => p === undefined || concerned({ callerId: p.caller.callerId, tenantId: p.tenant.id }));
      }),
    );
  }

  start(): this {
    this.cache.start();
    return this;
  }

  /** Whether announcements arrive (`subscribed`), and how many callers are held. */
  status(): SubscribedCacheStatus {
    return this.cache.status();
  }

  /** Not awaited: with Redis down, UNSUBSCRIBE waits in ioredis' queue until the connection closes. */
  close(): void {
    this.cache.close();
  }

  /** The principal of this request, or throws the resolver's problem (401, 403, 404, 503...). */
  resolve(req: IncomingMessage): TenantPrincipal | Promise<TenantPrincipal> {
    const tenantHeader = req.headers['x-tenant-id'];
    const key: CallerKey = { authorization: req.headers.authorization, tenantHeader: typeof tenantHeader === 'string' ? tenantHeader : undefined };
    return this.cache.peek(key) ?? this.cache.get(key);
  }
}
