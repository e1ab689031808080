import type { IncomingMessage } from 'node:http';
import { type CanActivate, type ExecutionContext, Logger } from '@nestjs/common';
import type { Request } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { CHANNELS, type PubSub } from '@flagship/redis';
import { callerOf, type CallerContext, clientAddress } from '@flagship/service-kit';
import type { AuthenticatedRequest } from '../../auth/auth.decorators';

const MAX_ENTRIES = 10_000;

/** Who is calling and in which tenant, as the app's guards resolved it. */
export interface Principal {
  caller: CallerContext;
  tenant: TenantEntity;
}

interface Entry extends Principal {
  expiresAt: number;
  /** From here on, a request still served from the entry starts its refresh. */
  refreshAt: number;
}

/** The route whose metadata (@TenantAccess) the guards read. */
export interface GuardedRoute {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  handler: Function;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  controller: Function;
}

/**
 * The evaluate routes answered outside Nest keep Nest's exact authentication and authorization: the
 * app's own guards run, with the route's own metadata, on a stand-in request. What they resolved
 * (the caller, its membership, role, tenant and plan) is kept for `ttlMs` (EVALUATE_CALLER_CACHE_MS)
 * per Authorization header and X-Tenant-ID (and route), so a busy client costs the guards' queries
 * once per period, not once per call, and never waits for them: the entry is refreshed in the
 * background from half its life. Refusals are not kept: each is decided again.
 *
 * Revocation promises a removed member or client is refused within 5 s on every replica. Announced
 * changes do it at once: a membership change drops that person's entries; a client revocation or a
 * tenant change drops everything (rare, and the cache refills in one query per caller); so does a
 * reconnect of the subscriber, as announcements may have been missed. The TTL bounds what is never
 * announced (Redis away, a membership edited outside the app).
 */
export class PrincipalCache {
  private readonly logger = new Logger('PrincipalCache');
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<Principal>>();
  private readonly unsubscribes: Array<Promise<() => Promise<void>>> = [];

  constructor(
    private readonly guards: readonly CanActivate[],
    private readonly ttlMs: number,
  ) {}

  listen(pubsub: PubSub): void {
    const subs = [
      pubsub.subscribe(CHANNELS.clientRevoked, () => this.clear()),
      pubsub.subscribe(CHANNELS.tenantChanged, () => this.clear()),
      pubsub.subscribe(CHANNELS.membershipChanged, (m) => this.forgetUser(m.userId)),
    ];
    for (const sub of subs) {
      sub.catch((err: Error) => this.logger.warn(`a subscription failed: ${err.message}; cached callers expire after ${this.ttlMs} ms`));
      this.unsubscribes.push(sub);
    }
    pubsub.onReconnect(() => this.clear());
  }

  /** Entries being loaded are dropped too: their guards may have read the state before the change. */
  private clear(): void {
    this.entries.clear();
    this.pending.clear();
  }

  /** A membership of this person changed: their entries go (all of them, if the message names nobody). */
  private forgetUser(userId: unknown): void {
    if (typeof userId !== 'string') return this.clear();
    const callerId = `user:${userId}`;
    for (const [key, e] of this.entries) if (e.caller.callerId === callerId) this.entries.delete(key);
    this.pending.clear();
  }

  /** Not awaited: with Redis down, UNSUBSCRIBE waits in ioredis' queue until the connection closes. */
  close(): void {
    for (const sub of this.unsubscribes) sub.then((off) => off(), () => undefined).catch(() => undefined);
  }

  /** The principal of this request, or throws the guards' problem (401, 403, 503...). */
  resolve(req: IncomingMessage, route: GuardedRoute): Promise<Principal> | Principal {
    const auth = req.headers.authorization;
    const tenantHeader = req.headers['x-tenant-id'];
    const key = `${route.handler.name}\n${auth ?? ''}\n${typeof tenantHeader === 'string' ? tenantHeader : ''}`;
    const hit = this.entries.get(key);
    const now = Date.now();
    if (hit !== undefined && hit.expiresAt > now) {
      // Refreshed ahead, in the background, so a busy caller never waits for the guards; a refusal
      // then drops the entry and the next request gets it.
      if (hit.refreshAt <= now && this.pending.get(key) === undefined) {
        this.load(key, req, route, auth).catch(() => {
          if (this.entries.get(key) === hit) this.entries.delete(key);
        });
      }
      return hit;
    }
    if (hit !== undefined) this.entries.delete(key);
    // Concurrent requests of one caller share one run of the guards.
    return this.pending.get(key) ?? this.load(key, req, route, auth);
  }

  private load(key: string, req: IncomingMessage, route: GuardedRoute, auth: string | undefined): Promise<Principal> {
    const loading = this.runGuards(req, route).then((principal) => {
      const now = Date.now();
      const expiresAt = Math.min(now + this.ttlMs, tokenExpiry(auth) ?? Infinity);
      const entry: Entry = { ...principal, expiresAt, refreshAt: now + this.ttlMs / 2 };
      // Dropped by an announcement while loading: answer the requests that waited, keep nothing.
      if (this.pending.get(key) !== loading) return entry;
      this.entries.delete(key);
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, entry);
      return entry;
    });
    this.pending.set(key, loading);
    const done = (): void => {
      if (this.pending.get(key) === loading) this.pending.delete(key);
    };
    loading.then(done, done);
    return loading;
  }

  private async runGuards(req: IncomingMessage, route: GuardedRoute): Promise<Principal> {
    // Only what the guards read: headers, the address, no params (the tenant comes from the header).
    const standIn = { headers: req.headers, params: {}, ip: clientAddress(req), method: req.method, url: req.url } as unknown as AuthenticatedRequest;
    const context = {
      getType: () => 'http',
      getHandler: () => route.handler,
      getClass: () => route.controller,
      switchToHttp: () => ({ getRequest: () => standIn, getResponse: () => undefined, getNext: () => undefined }),
    } as unknown as ExecutionContext;
    for (const guard of this.guards) await guard.canActivate(context);
    const caller = callerOf(standIn as Request);
    const tenant = standIn.tenant;
    if (caller === undefined || tenant === undefined) throw new Error('the guards resolved no caller or tenant for a @TenantAccess route');
    return { caller, tenant };
  }
}

/**
 * When the bearer token (a JWT the guards just verified) expires, in ms: a cached caller must not
 * outlive its token. Undefined when it names no expiry.
 */
function tokenExpiry(authorization: string | undefined): number | undefined {
  const payload = authorization?.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
