import { Logger } from '@nestjs/common';
import { ProblemException } from '@flagship/problem-details';
import type { PubSub } from '@flagship/redis';
import { type AccessHolder, followAccessChanges } from '../auth/access-changes';
import type { TenantAccessRule } from '../auth/auth.decorators';
import type { TenantAccessResolver, TenantPrincipal } from '../auth/tenant-access.resolver';

/** Who may hold a flag-data stream, at its open and for as long as it lasts: as GET /api/flags, members from viewer up, clients with flags:read. */
export const FLAG_STREAM_ACCESS: TenantAccessRule = { role: 'viewer', scopes: ['flags:read'], headerRequired: true };

/** Streams whose access is decided again at once after an announcement; the rest wait their turn (a Redis reconnect re-decides every stream). */
const CHECK_CONCURRENCY = 4;
/** An open whose access was resolved before an announcement concerning it was heard is decided again: announcements are remembered this long. */
const RECENT_CHANGE_MS = 10_000;
/** After an outage of the resolver, the next try. */
const RETRY_MS = 1000;
/** The resolver's answers that mean the caller lost access (not an outage). */
const REFUSED = new Set([400, 401, 403, 404]);

/** A stream as its access is decided: the holder, and the credentials it opened with (in memory only). */
export interface AccessedStream extends AccessHolder {
  authorization: string | undefined;
}

/** What the watch asks of the streams' keeper. */
export interface WatchedStreams<S extends AccessedStream> {
  /** Every stream held now. */
  streams(): Iterable<S>;
  /** Whether `s` has ended already. */
  ended(s: S): boolean;
  /** Access decided again, and granted: `principal` as resolved now (its plan may have changed). */
  granted(s: S, principal: TenantPrincipal): void;
  /** Access refused: `refusal` is what a reconnect would get. */
  refused(s: S, refusal: ProblemException): void;
}

/**
 * A flag-data stream lasts only as long as its principal's access: when an access announcement
 * (auth/access-changes.ts: a client revoked, a membership or a tenant changed) concerns a stream,
 * its access is decided again by the TenantAccessResolver as at its open, streams of one token
 * sharing one decision; a refusal ends them, an outage leaves them and asks again.
 */
export class FlagStreamAccess<S extends AccessedStream> {
  private readonly logger = new Logger('FlagStreams');
  private readonly unsubscribes: Array<Promise<(() => Promise<void>) | undefined>> = [];
  private readonly checks = new Map<string, Set<S>>();
  private running = 0;
  private readonly recent: Array<{ at: number; concerns: (holder: AccessHolder) => boolean }> = [];
  private closed = false;

  constructor(
    pubsub: PubSub,
    private readonly resolver: TenantAccessResolver,
    private readonly watched: WatchedStreams<S>,
  ) {
    // Not awaited: with Redis down, SUBSCRIBE waits in ioredis' queue (FLAG_STREAM_MAX_AGE_SECONDS bounds what is missed).
    followAccessChanges((channel, concerns) => {
      const sub = pubsub.subscribe(channel, (m) => this.changed(concerns(m))).catch((err: unknown) => {
        this.logger.warn(`access announcements on ${channel.name} not subscribed (${String(err)}); streams end within FLAG_STREAM_MAX_AGE_SECONDS`);
        return undefined;
      });
      this.unsubscribes.push(sub);
    });
    // Announcements made while the subscriber was away were missed: every stream's access is decided again.
    pubsub.onReconnect(() => this.changed(() => true));
  }

  /** A stream just opened: its access was resolved before this, and an announcement heard since may postdate that read. */
  opened(s: S, resolvedAt: number): void {
    if (this.recent.some((c) => c.at > resolvedAt - RECENT_CHANGE_MS && c.concerns(s))) this.check(s);
  }

  close(): void {
    this.closed = true;
    for (const sub of this.unsubscribes) sub.then((off) => off?.(), () => undefined).catch(() => undefined);
    this.checks.clear();
  }

  /** The streams an announcement concerns are decided again, once every subscriber of the message has heard it. */
  private changed(concerns: (holder: AccessHolder) => boolean): void {
    if (this.closed) return;
    const now = Date.now();
    while (this.recent.length > 0 && this.recent[0]!.at <= now - RECENT_CHANGE_MS) this.recent.shift();
    this.recent.push({ at: now, concerns });
    // The revocation list (ClientRevocations) applies a client revocation in its own handler of this message.
    setImmediate(() => {
      for (const s of this.watched.streams()) if (concerns(s)) this.check(s);
    });
  }

  private check(s: S): void {
    if (this.closed || this.watched.ended(s)) return;
    const key = `${s.authorization ?? ''}\n${s.tenantId}`;
    let waiting = this.checks.get(key);
    if (waiting === undefined) this.checks.set(key, (waiting = new Set()));
    waiting.add(s);
    this.run();
  }

  private run(): void {
    while (!this.closed && this.running < CHECK_CONCURRENCY && this.checks.size > 0) {
      const [key, streams] = this.checks.entries().next().value!;
      this.checks.delete(key);
      this.running++;
      void this.decide([...streams]).finally(() => {
        this.running--;
        this.run();
      });
    }
  }

  private async decide(streams: S[]): Promise<void> {
    const live = streams.filter((s) => !this.watched.ended(s));
    if (live.length === 0) return;
    const { authorization, tenantId, callerId } = live[0]!;
    try {
      const principal = await this.resolver.resolve(authorization, tenantId, FLAG_STREAM_ACCESS);
      for (const s of live) this.watched.granted(s, principal);
    } catch (err) {
      if (err instanceof ProblemException && REFUSED.has(err.problem.status)) {
        this.logger.log(`${live.length} flag-data stream(s) of ${callerId} in tenant ${tenantId} ended: ${err.problem.slug}`);
        for (const s of live) this.watched.refused(s, err);
        return;
      }
      this.logger.warn(`the access of a flag-data stream could not be decided again (${(err as Error).message}); asking again in ${RETRY_MS} ms`);
      setTimeout(() => {
        for (const s of live) this.check(s);
      }, RETRY_MS).unref();
    }
  }
}
