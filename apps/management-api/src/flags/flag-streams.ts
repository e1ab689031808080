import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG } from '@flagship/config';
import { isPlan, type Plan } from '@flagship/domain';
import { type FlagSetChanged, type FlagSetView, FlagStore } from '@flagship/flag-store';
import { ProblemException } from '@flagship/problem-details';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { addressBucket, clientAddress } from '@flagship/service-kit';
import { Coalescer, type ReplayEntry, ReplayLog, SseHub } from '@flagship/sse';
import { type AccessHolder, followAccessChanges } from '../auth/access-changes';
import type { TenantAccessRule } from '../auth/auth.decorators';
import { AuthProblems, BEARER_CHALLENGE } from '../auth/auth.errors';
import { TenantAccessResolver, type TenantPrincipal } from '../auth/tenant-access.resolver';
import type { ManagementApiConfig } from '../env.schema';
import { EnvironmentsService } from '../environments/environments.service';
import { type AdmittedStream, flagStreamBounds, type StreamBound } from './flag-stream-admission';
import { FlagProblems } from './flags.errors';

/** Who may hold a flag-data stream, at its open and for as long as it lasts: as GET /api/flags, members from viewer up, clients with flags:read. */
export const FLAG_STREAM_ACCESS: TenantAccessRule = { role: 'viewer', scopes: ['flags:read'], headerRequired: true };

/** Changes heard within this are sent as one event (a burst of PATCHes, an import). */
const COALESCE_MS = 25;
/** The replay window of a tenant-environment: the latest events up to these bounds. */
const REPLAY = { maxEvents: 512, maxBytes: 512 * 1024 };
/** A feed with no stream is kept this long, so a client that reconnects can resume from it... */
const IDLE_FEED_MS = 120_000;
/** ...and at most this many of them; the oldest goes first. */
const MAX_IDLE_FEEDS = 100;
/** After a failed read (Postgres away), the next try. */
const RETRY_READ_MS = 1000;
const RETRY_AFTER_S = 5;
/** A put is written in pieces of about this many characters, each once the client has read the one before. */
const PUT_PIECE_CHARS = 64 * 1024;
/** Streams whose access is decided again at once after an announcement; the rest wait their turn (a Redis reconnect re-decides every stream). */
const CHECK_CONCURRENCY = 4;
/** An open whose access was resolved before an announcement concerning it was heard is decided again: announcements are remembered this long. */
const RECENT_CHANGE_MS = 10_000;
/** The resolver's answers that mean the caller lost access (not an outage). */
const REFUSED = new Set([400, 401, 403, 404]);

const planOf = (p: TenantPrincipal): Plan => (isPlan(p.caller.plan) ? p.caller.plan : 'free');

/** Why the server ended a stream: the `end` event's reason. */
export type StreamEnd = 'access-withdrawn' | 'credential-expired' | 'max-age' | 'shed' | 'shutdown';

interface Stream extends AdmittedStream {
  /** The request's Authorization header, held in memory only: the stream's access is decided again with it. */
  authorization: string | undefined;
  /** What an unanswered stream the server ended is refused with, when its reason alone does not say. */
  refusal?: ProblemException;
  /** Its put(s) under way: a later put follows the one before. */
  putting?: Promise<unknown>;
}


/** One tenant-environment's events for its streams. The flags themselves are the store's (`view.rows`). */
export class Feed {
  /** A new epoch when the feed starts over: ids of another say nothing here. */
  epoch = randomBytes(6).toString('base64url');
  log = new ReplayLog(REPLAY);
  readonly streams = new Set<Stream>();
  /** The store's set this feed follows; the store changes it in place, or replaces it (then the feed starts over). */
  view: FlagSetView | undefined;
  ready: Promise<unknown> = Promise.resolve();
  /** The keys changed and not yet sent. */
  changes: Coalescer<FlagSetChanged, Set<string>> | undefined;
  /** The store's hold on the set while streams listen. */
  release: (() => void) | undefined;
  idleTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly tenantId: string,
    readonly environment: string,
  ) {}

  eventId(seq = this.log.lastId): string {
    return `${this.epoch}:${seq}`;
  }

  /** The events after `lastEventId`, or undefined when this feed cannot tell (another epoch, out of the window). */
  since(lastEventId: string | undefined): ReplayEntry[] | undefined {
    const m = lastEventId === undefined ? null : /^([A-Za-z0-9_-]+):(\d{1,15})$/.exec(lastEventId);
    return m === null || m[1] !== this.epoch ? undefined : this.log.after(Number(m[2]));
  }

  append(name: 'patch' | 'delete', data: string): string {
    const id = this.log.lastId + 1;
    const frame = `id: ${this.epoch}:${id}\nevent: ${name}\ndata: ${data}\n\n`;
    this.log.append({ id, frame, at: Date.now() });
    return frame;
  }

  startOver(view: FlagSetView): void {
    this.view = view;
    this.epoch = randomBytes(6).toString('base64url');
    this.log = new ReplayLog(REPLAY);
  }
}

/**
 * The flag-data stream (`GET /api/flag-stream`, described with its controller): an environment's
 * flag definitions as held by the flag store (its rows' JSON, never a copy), a `put` then `patch` and
 * `delete` as the store applies changes from any replica, coalesced per tenant-environment for
 * COALESCE_MS and sent once whatever the number of streams. On the SSE kit: the hub admits by
 * flagStreamBounds, heartbeats, cuts off a consumer past FLAG_STREAM_MAX_BUFFER_BYTES, paces the put,
 * and ends a stream at its token's expiry or FLAG_STREAM_MAX_AGE_SECONDS; the replay log resumes
 * from Last-Event-ID. A stream lasts only as long as its principal's access: an access announcement
 * (auth/access-changes.ts) that concerns it has its access decided again as at its open, and a
 * refusal ends it. The server tells every end with an `end` event naming why.
 */
@Injectable()
export class FlagStreams implements OnModuleDestroy {
  private readonly logger = new Logger('FlagStreams');
  private readonly feeds = new Map<string, Feed>();
  private readonly hub: SseHub<Stream, StreamEnd>;
  private readonly stopListening: () => void;
  private readonly unsubscribes: Array<Promise<(() => Promise<void>) | undefined>> = [];
  /** Streams whose access is to be decided again, by credentials and tenant: the streams of one token share one decision. */
  private readonly checks = new Map<string, Set<Stream>>();
  private checksRunning = 0;
  private readonly recentChanges: Array<{ at: number; concerns: (holder: AccessHolder) => boolean }> = [];
  private destroyed = false;
  private readonly maxAgeMs: number;

  constructor(
    @Inject(APP_CONFIG) config: ManagementApiConfig,
    private readonly store: FlagStore,
    private readonly environments: EnvironmentsService,
    private readonly access: TenantAccessResolver,
    @Inject(PUBSUB) pubsub: PubSub,
  ) {
    if (!store.keepsJson) throw new Error('FlagStreams sends the flag store\'s JSON: its FlagStore needs keepJson');
    this.maxAgeMs = config.FLAG_STREAM_MAX_AGE_SECONDS * 1000;
    this.hub = new SseHub<Stream, StreamEnd>({
      bounds: flagStreamBounds({
        perTenant: { free: config.FLAG_STREAMS_PER_TENANT_FREE, standard: config.FLAG_STREAMS_PER_TENANT_STANDARD, premium: config.FLAG_STREAMS_PER_TENANT_PREMIUM },
        perUser: config.FLAG_STREAMS_PER_USER,
        perClient: config.FLAG_STREAMS_PER_CLIENT,
        perAddress: config.FLAG_STREAMS_PER_ADDRESS,
        perProcess: config.FLAG_STREAMS_PER_PROCESS,
      }),
      maxBufferedBytes: config.FLAG_STREAM_MAX_BUFFER_BYTES,
      heartbeatMs: config.FLAG_STREAM_HEARTBEAT_SECONDS * 1000,
      endFrame: (reason) => `event: end\ndata: {"reason":"${reason}"}\n\n`,
      onCutOff: (s, unsent) => this.logger.warn(`a flag-data stream of tenant ${s.tenantId} was closed: its client left ${unsent} bytes unread`),
    });
    this.stopListening = this.store.onChange((change) => void this.feeds.get(`${change.tenantId}/${change.environment}`)?.changes?.add(change));
    // Not awaited: with Redis down, SUBSCRIBE waits in ioredis' queue (FLAG_STREAM_MAX_AGE_SECONDS bounds what is missed).
    followAccessChanges((channel, concerns) => {
      const sub = pubsub.subscribe(channel, (m) => this.accessChanged(concerns(m))).catch((err: unknown) => {
        this.logger.warn(`access announcements on ${channel.name} not subscribed (${String(err)}); streams end within FLAG_STREAM_MAX_AGE_SECONDS`);
        return undefined;
      });
      this.unsubscribes.push(sub);
    });
    // Announcements made while the subscriber was away were missed: every stream's access is decided again.
    pubsub.onReconnect(() => this.accessChanged(() => true));
  }

  onModuleDestroy(): void {
    this.destroyed = true;
    this.stopListening();
    for (const sub of this.unsubscribes) sub.then((off) => off?.(), () => undefined).catch(() => undefined);
    this.checks.clear();
    // Open streams would hold the server's close until the grace period: they end now, and clients reconnect elsewhere.
    this.hub.close('shutdown');
    for (const feed of [...this.feeds.values()]) this.drop(feed);
  }

  /**
   * Answers `res` with the stream, or throws the refusal (unknown environment, a bound reached,
   * Postgres away). `principal` is the request's, as the guards resolved it under FLAG_STREAM_ACCESS.
   */
  async open(principal: TenantPrincipal, requestedEnvironment: string | undefined, lastEventId: string | undefined, req: Request, res: Response): Promise<void> {
    const now = Date.now();
    const stream: Stream = {
      tenantId: principal.tenant.id,
      plan: planOf(principal),
      callerId: principal.caller.callerId,
      address: addressBucket(clientAddress(req)),
      authorization: req.headers.authorization,
    };
    // Counted before the first await, so concurrent opens cannot all pass a bound.
    const decision = this.hub.admit(stream);
    if (!decision.admitted) throw this.refusal(decision.bound as StreamBound | 'closed', decision.limit, stream);
    if (decision.shed !== undefined) this.hub.end(decision.shed, 'shed');
    const expiresIn = principal.expiresAt - now;
    this.hub.deadline(stream, now + Math.max(0, Math.min(expiresIn, this.maxAgeMs)), expiresIn < this.maxAgeMs ? 'credential-expired' : 'max-age');
    // Its access was resolved before this: an announcement heard since may postdate that read.
    if (this.recentChanges.some((c) => c.at > now - RECENT_CHANGE_MS && c.concerns(stream))) this.check(stream);
    let feed: Feed;
    let view: FlagSetView;
    try {
      feed = this.feedOf(stream.tenantId, await this.environments.resolve(stream.tenantId, requestedEnvironment));
      view = await this.current(feed);
    } catch (err) {
      this.hub.release(stream);
      throw err;
    }
    const ended = this.hub.endedWhy(stream);
    if (ended !== undefined) throw this.endedRefusal(stream, ended);
    if (req.socket.destroyed) return this.hub.release(stream);
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    req.socket.setNoDelay(true);
    res.flushHeaders();
    this.hub.attach(stream, res);
    this.listen(feed, stream);
    res.on('close', () => this.leave(feed, stream));
    const replay = feed.since(lastEventId);
    if (replay === undefined) return void this.sendPut(feed, stream, view);
    for (const e of replay) this.hub.write(stream, e.frame);
    // A comment at once: a resumed client with nothing to replay knows it is current without waiting for a heartbeat.
    this.hub.write(stream, ':\n\n');
  }

  /** Open streams of a tenant on this process (tests, metrics). */
  streamsOf(tenantId: string): number {
    return this.hub.count('tenant', tenantId);
  }

  /** Open streams on this process. */
  held(): number {
    return this.hub.size;
  }

  /** The put, in pieces at the pace the client reads (the kit queues what lands meanwhile): every flag served, as the store holds its JSON. */
  private sendPut(feed: Feed, stream: Stream, view: FlagSetView): Promise<unknown> {
    const texts: string[] = [];
    for (const row of view.rows.values()) if (row.json !== undefined) texts.push(row.json);
    const id = feed.eventId();
    function* pieces(): Generator<string> {
      let piece = `id: ${id}\nevent: put\ndata: {"flags":[`;
      for (let i = 0; i < texts.length; i++) {
        piece += i === 0 ? texts[i] : `,${texts[i]}`;
        if (piece.length >= PUT_PIECE_CHARS) {
          yield piece;
          piece = '';
        }
      }
      yield `${piece}]}\n\n:\n\n`;
    }
    stream.putting = this.hub.writePaced(stream, pieces());
    return stream.putting;
  }

  private refusal(bound: StreamBound | 'closed', limit: number, s: Stream): ProblemException {
    if (bound === 'process' || bound === 'closed') return this.full();
    const detail: Record<Exclude<StreamBound, 'process'>, string> = {
      tenant: `This tenant holds ${limit} flag-data streams on this server, the allowance of its ${s.plan} plan; close one (one per application process is enough).`,
      user: `You hold ${limit} flag-data streams on this server across your tenants, the most one person may; applications should stream with an OAuth client's token.`,
      client: `This OAuth client holds ${limit} flag-data streams on this server, the most one client may.`,
      address: `Your network holds ${limit} flag-data streams on this server, the most one address (an IPv6 /64) may.`,
    };
    return new ProblemException(FlagProblems['too-many-flag-streams'], detail[bound], { limit, per: bound }, { 'Retry-After': String(RETRY_AFTER_S * 6) });
  }

  private full(): ProblemException {
    return new ProblemException(
      FlagProblems['flag-streams-full'],
      `This server holds ${this.hub.size} flag-data streams, as many as it may; retry, another replica may take it.`,
      {},
      { 'Retry-After': String(RETRY_AFTER_S) },
    );
  }

  /** What a stream the server ended before it was answered is refused with. */
  private endedRefusal(s: Stream, reason: StreamEnd): ProblemException {
    if (s.refusal !== undefined) return s.refusal;
    return reason === 'credential-expired' ? new ProblemException(AuthProblems['invalid-token'], 'The token expired.', {}, BEARER_CHALLENGE) : this.full();
  }

  /** An access announcement: the streams it concerns are decided again, once every subscriber of the message has heard it. */
  private accessChanged(concerns: (holder: AccessHolder) => boolean): void {
    if (this.destroyed) return;
    const now = Date.now();
    while (this.recentChanges.length > 0 && this.recentChanges[0]!.at <= now - RECENT_CHANGE_MS) this.recentChanges.shift();
    this.recentChanges.push({ at: now, concerns });
    // The revocation list (ClientRevocations) applies a client revocation in its own handler of this message.
    setImmediate(() => {
      for (const s of this.hub.streams()) if (concerns(s)) this.check(s);
    });
  }

  /** Queues the stream's access to be decided again (streams of one token and tenant share one decision). */
  private check(stream: Stream): void {
    if (this.destroyed || this.hub.endedWhy(stream) !== undefined) return;
    const key = `${stream.authorization ?? ''}\n${stream.tenantId}`;
    let waiting = this.checks.get(key);
    if (waiting === undefined) this.checks.set(key, (waiting = new Set()));
    waiting.add(stream);
    this.runChecks();
  }

  private runChecks(): void {
    while (!this.destroyed && this.checksRunning < CHECK_CONCURRENCY && this.checks.size > 0) {
      const [key, streams] = this.checks.entries().next().value!;
      this.checks.delete(key);
      this.checksRunning++;
      void this.decide([...streams]).finally(() => {
        this.checksRunning--;
        this.runChecks();
      });
    }
  }

  /** Decides the access of streams sharing credentials again, as at their open: a refusal ends them; an outage leaves them and asks again. */
  private async decide(streams: Stream[]): Promise<void> {
    const live = streams.filter((s) => this.hub.endedWhy(s) === undefined);
    if (live.length === 0) return;
    const { authorization, tenantId } = live[0]!;
    try {
      const principal = await this.access.resolve(authorization, tenantId, FLAG_STREAM_ACCESS);
      // A plan changed (tenantChanged) moves the tenant's streams in or out of those shed first.
      for (const s of live) s.plan = planOf(principal);
    } catch (err) {
      if (err instanceof ProblemException && REFUSED.has(err.problem.status)) {
        this.logger.log(`${live.length} flag-data stream(s) of ${live[0]!.callerId} in tenant ${tenantId} ended: ${err.problem.slug}`);
        for (const s of live) {
          s.refusal = err;
          this.hub.end(s, 'access-withdrawn');
        }
        return;
      }
      this.logger.warn(`the access of a flag-data stream could not be decided again (${(err as Error).message}); asking again in ${RETRY_READ_MS} ms`);
      setTimeout(() => {
        for (const s of live) this.check(s);
      }, RETRY_READ_MS).unref();
    }
  }

  /** The feed of a tenant-environment, its set held by the store from now on so that its changes are heard. */
  private feedOf(tenantId: string, environment: string): Feed {
    const k = `${tenantId}/${environment}`;
    const found = this.feeds.get(k);
    if (found !== undefined) {
      found.release ??= this.store.hold(tenantId, environment);
      return found;
    }
    const feed = new Feed(tenantId, environment);
    feed.release = this.store.hold(tenantId, environment);
    feed.changes = new Coalescer<FlagSetChanged, Set<string>>({
      windowMs: COALESCE_MS,
      // A whole new set (no keys) is told by the set the store holds: current() starts the feed over.
      fold: (keys = new Set(), change) => {
        for (const key of change.keys ?? []) keys.add(key);
        return keys;
      },
      emit: (keys) => this.flush(feed, keys),
      retry: {
        afterMs: RETRY_READ_MS,
        merge: (failed, since) => new Set([...failed, ...(since ?? [])]),
        // Postgres away: the changes stay pending; streams keep their heartbeats meanwhile.
        onError: (err) => this.logger.warn(`flag changes could not be read for the flag-data stream: ${(err as Error).message}`),
      },
    });
    feed.ready = this.store.view(tenantId, environment).then((view) => (feed.view = view));
    feed.ready.catch(() => {
      if (this.feeds.get(k) === feed) this.drop(feed);
    });
    this.feeds.set(k, feed);
    return feed;
  }

  /**
   * The set the feed follows, as the store holds it now. When the store holds another (the set was
   * dropped, being too large, or while the feed was idle, and read again), the changes between were
   * not heard: the feed starts over with a new epoch, and its streams get a fresh put.
   */
  private async current(feed: Feed): Promise<FlagSetView> {
    await feed.ready;
    const view = this.store.peek(feed.tenantId, feed.environment, { stale: true }) ?? (await this.store.view(feed.tenantId, feed.environment));
    if (view !== feed.view) {
      feed.startOver(view);
      for (const s of feed.streams) s.putting = (s.putting ?? Promise.resolve()).then(() => this.sendPut(feed, s, view));
    }
    return view;
  }

  /** Sends what changed (once for every stream of the feed) as at most one patch and one delete, from the store's rows. */
  private async flush(feed: Feed, keys: Set<string>): Promise<void> {
    // An idle feed whose set the store let go has missed changes: a client that resumes gets a put.
    if (feed.release === undefined && this.store.peek(feed.tenantId, feed.environment, { stale: true }) !== feed.view) return this.drop(feed);
    const view = await this.current(feed);
    const changed: string[] = [];
    const removed: string[] = [];
    for (const key of keys) {
      const json = view.rows.get(key)?.json;
      if (json !== undefined) changed.push(json);
      else removed.push(key);
    }
    if (changed.length > 0) this.hub.broadcast(feed.append('patch', `{"flags":[${changed.join(',')}]}`), feed.streams);
    if (removed.length > 0) this.hub.broadcast(feed.append('delete', JSON.stringify({ keys: removed })), feed.streams);
  }

  private listen(feed: Feed, stream: Stream): void {
    feed.streams.add(stream);
    clearTimeout(feed.idleTimer);
    feed.idleTimer = undefined;
  }

  /** A stream left: a feed with none lets go of the store's hold and is kept a while for a client that resumes. */
  private leave(feed: Feed, stream: Stream): void {
    feed.streams.delete(stream);
    if (feed.streams.size > 0 || this.feeds.get(`${feed.tenantId}/${feed.environment}`) !== feed) return;
    feed.release?.();
    feed.release = undefined;
    feed.idleTimer = setTimeout(() => this.drop(feed), IDLE_FEED_MS).unref();
    // The feed idle longest goes first past the bound: moved last, the Map keeps them in that order.
    this.feeds.delete(`${feed.tenantId}/${feed.environment}`);
    this.feeds.set(`${feed.tenantId}/${feed.environment}`, feed);
    const idle = [...this.feeds.values()].filter((f) => f.streams.size === 0 && f.idleTimer !== undefined);
    for (const f of idle.slice(0, Math.max(0, idle.length - MAX_IDLE_FEEDS))) this.drop(f);
  }

  private drop(feed: Feed): void {
    feed.changes?.close();
    feed.release?.();
    feed.release = undefined;
    clearTimeout(feed.idleTimer);
    const k = `${feed.tenantId}/${feed.environment}`;
    if (this.feeds.get(k) === feed) this.feeds.delete(k);
  }
}
