import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { Request, Response } from 'express';
import { APP_CONFIG } from '@flagship/config';
import { isPlan, type Plan } from '@flagship/domain';
import { type FlagSetChanged, FlagStore, type StoredFlag } from '@flagship/flag-store';
import { ProblemException } from '@flagship/problem-details';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { addressBucket, clientAddress } from '@flagship/service-kit';
import { type AccessHolder, followAccessChanges } from '../auth/access-changes';
import type { TenantAccessRule } from '../auth/auth.decorators';
import { AuthProblems, BEARER_CHALLENGE } from '../auth/auth.errors';
import { TenantAccessResolver, type TenantPrincipal } from '../auth/tenant-access.resolver';
import type { ManagementApiConfig } from '../env.schema';
import { EnvironmentsService } from '../environments/environments.service';
import { type AdmittedStream, FlagStreamAdmission, type StreamBound } from './flag-stream-admission';
import { FlagProblems } from './flags.errors';

/** Who may hold a flag-data stream, at its open and for as long as it lasts: as GET /api/flags, members from viewer up, clients with flags:read. */
export const FLAG_STREAM_ACCESS: TenantAccessRule = { role: 'viewer', scopes: ['flags:read'], headerRequired: true };

/** Changes heard within this are read and sent as one event (a burst of PATCHes, an import). */
const COALESCE_MS = 25;
/** The replay window of a tenant-environment: the latest events up to these bounds. */
const REPLAY_MAX_EVENTS = 512;
const REPLAY_MAX_BYTES = 512 * 1024;
/** A feed with no stream is kept this long, so a client that reconnects can resume from it. */
const IDLE_FEED_MS = 120_000;
/** At most this many feeds with no stream are kept; the oldest goes first. */
const MAX_IDLE_FEEDS = 100;
/** After a failed read of changes (Postgres away), the next try. */
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

/** The plan a stream is admitted under: a tenant row with a plan this build does not know counts as free, never as unbounded. */
const planOf = (p: TenantPrincipal): Plan => (isPlan(p.caller.plan) ? p.caller.plan : 'free');

/** Why the server ended a stream: the `end` event's reason. */
export type StreamEnd = 'access-withdrawn' | 'credential-expired' | 'max-age' | 'shed' | 'shutdown';

interface FeedEvent {
  seq: number;
  /** The event as written, `id:` to the blank line. */
  text: string;
}

interface Stream extends AdmittedStream {
  res: Response;
  /** The request's Authorization header, held in memory only: the stream's access is decided again with it. */
  authorization: string | undefined;
  feed: Feed | undefined;
  /** Once its head is written: before that, an ended stream is answered with `ended` instead. */
  answered: boolean;
  /** Set when it stops counting: the refusal an unanswered stream gets. */
  ended: ProblemException | undefined;
  /** Ends it at its token's expiry or its maximum age, whichever comes first. */
  endTimer: NodeJS.Timeout | undefined;
  /** Events held while its put is being written (the put goes out at the pace the client reads it), with their size. */
  queue: string[] | undefined;
  queued: number;
}

/**
 * One tenant-environment's flag definitions as the streams see them, the events since, and the
 * streams listening. Definitions are held as their JSON text: a put is a join, no re-serialising.
 */
export class Feed {
  /** A new feed (after a restart, or once dropped) has a new epoch: ids of another say nothing here. */
  readonly epoch = randomBytes(6).toString('base64url');
  seq = 0;
  /** Events of seq <= this are no longer in `log`: a client there cannot resume. */
  trimmedThrough = 0;
  readonly log: FeedEvent[] = [];
  logBytes = 0;
  readonly flags = new Map<string, { fingerprint: string; text: string }>();
  readonly streams = new Set<Stream>();
  ready: Promise<void> = Promise.resolve();
  /** Changes heard and not yet sent: the flag as the store read it, or null when it was taken out. */
  pendingRows = new Map<string, StoredFlag | null>();
  pendingAll = false;
  flushTimer: NodeJS.Timeout | undefined;
  flushing = false;
  idleSince = 0;

  constructor(
    readonly tenantId: string,
    readonly environment: string,
  ) {}

  eventId(seq = this.seq): string {
    return `${this.epoch}:${seq}`;
  }

  /** The events after `lastEventId`, or undefined when this feed cannot tell (another epoch, out of the window). */
  since(lastEventId: string | undefined): FeedEvent[] | undefined {
    if (lastEventId === undefined) return undefined;
    const m = /^([A-Za-z0-9_-]+):(\d{1,15})$/.exec(lastEventId);
    if (m === null || m[1] !== this.epoch) return undefined;
    const seq = Number(m[2]);
    if (seq < this.trimmedThrough || seq > this.seq) return undefined;
    return this.log.filter((e) => e.seq > seq);
  }

  /** The definitions of the put, as of `seq` (their texts never change: a change replaces them). */
  putTexts(): string[] {
    return [...this.flags.values()].map((f) => f.text);
  }

  append(name: 'patch' | 'delete', data: string): string {
    this.seq++;
    const text = `id: ${this.eventId()}\nevent: ${name}\ndata: ${data}\n\n`;
    this.log.push({ seq: this.seq, text });
    this.logBytes += text.length;
    while (this.log.length > REPLAY_MAX_EVENTS || (this.logBytes > REPLAY_MAX_BYTES && this.log.length > 0)) {
      const dropped = this.log.shift()!;
      this.logBytes -= dropped.text.length;
      this.trimmedThrough = dropped.seq;
    }
    return text;
  }
}

/**
 * The flag-data stream (`GET /api/flag-stream`): Server-Sent Events carrying an environment's flag
 * definitions in the evaluator's form, for SDKs that evaluate in process. `put` is every flag,
 * `patch` the flags that changed, `delete` the keys removed. Changes come from the flag store's
 * change seam (a held set re-reads announced changes at once, from any replica), carrying the rows
 * the store read, so a change costs no read of its own; they are coalesced for COALESCE_MS and sent
 * once per tenant-environment, whatever the number of streams. Only a whole new set (the store's
 * first load) is read again here.
 *
 * Resumable: every event has an id `{epoch}:{seq}`; a reconnect with Last-Event-ID inside the
 * feed's replay window gets only the events after it, else a fresh put. Bounded: streams per
 * tenant (by plan), caller, client network and process (FlagStreamAdmission), a slow consumer's
 * unsent output, the replay window, idle feeds; a put is bounded by the flag quota
 * (QUOTA_FLAGS_PER_TENANT) and each flag by the flag validators.
 *
 * A stream lasts only as long as its principal's access: it ends at its token's expiry, and when an
 * access announcement concerns it (auth/access-changes.ts: a client revoked, a membership or a tenant
 * changed) its access is decided again by the TenantAccessResolver, as at its open, and a refusal
 * ends it at once. FLAG_STREAM_MAX_AGE_SECONDS bounds what is never announced. A stream the server
 * ends gets an `end` event naming why, then the response ends; the client reconnects.
 */
@Injectable()
export class FlagStreams implements OnModuleDestroy {
  private readonly logger = new Logger('FlagStreams');
  private readonly feeds = new Map<string, Feed>();
  private readonly admission: FlagStreamAdmission<Stream>;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly stopListening: () => void;
  private readonly unsubscribes: Array<Promise<(() => Promise<void>) | undefined>> = [];
  /** Streams whose access is to be decided again, by credentials and tenant: the streams of one token share one decision. */
  private readonly checks = new Map<string, Set<Stream>>();
  private checksRunning = 0;
  private readonly recentChanges: Array<{ at: number; concerns: (holder: AccessHolder) => boolean }> = [];
  private destroyed = false;
  private readonly limits: { maxAgeMs: number; maxBuffer: number; heartbeatMs: number };

  constructor(
    @Inject(APP_CONFIG) config: ManagementApiConfig,
    private readonly snapshots: FlagStore,
    private readonly environments: EnvironmentsService,
    private readonly access: TenantAccessResolver,
    @Inject(PUBSUB) pubsub: PubSub,
  ) {
    this.limits = {
      maxAgeMs: config.FLAG_STREAM_MAX_AGE_SECONDS * 1000,
      maxBuffer: config.FLAG_STREAM_MAX_BUFFER_BYTES,
      heartbeatMs: config.FLAG_STREAM_HEARTBEAT_SECONDS * 1000,
    };
    this.admission = new FlagStreamAdmission({
      perTenant: { free: config.FLAG_STREAMS_PER_TENANT_FREE, standard: config.FLAG_STREAMS_PER_TENANT_STANDARD, premium: config.FLAG_STREAMS_PER_TENANT_PREMIUM },
      perUser: config.FLAG_STREAMS_PER_USER,
      perClient: config.FLAG_STREAMS_PER_CLIENT,
      perAddress: config.FLAG_STREAMS_PER_ADDRESS,
      perProcess: config.FLAG_STREAMS_PER_PROCESS,
    });
    this.stopListening = this.snapshots.onChange((change) => this.heard(change));
    this.heartbeat = setInterval(() => this.tick(), this.limits.heartbeatMs).unref();
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
    clearInterval(this.heartbeat);
    this.stopListening();
    for (const sub of this.unsubscribes) sub.then((off) => off?.(), () => undefined).catch(() => undefined);
    this.checks.clear();
    // Open streams would hold the server's close until the grace period: they end now, and clients reconnect elsewhere.
    for (const s of [...this.admission.streams()]) this.end(s, 'shutdown', this.full());
    for (const feed of this.feeds.values()) clearTimeout(feed.flushTimer);
    this.feeds.clear();
  }

  /**
   * Answers `res` with the stream, or throws the refusal (unknown environment, a bound reached,
   * Postgres away). `principal` is the request's, as the guards resolved it under FLAG_STREAM_ACCESS.
   */
  async open(principal: TenantPrincipal, requestedEnvironment: string | undefined, lastEventId: string | undefined, req: Request, res: Response): Promise<void> {
    const tenantId = principal.tenant.id;
    const now = Date.now();
    const stream: Stream = {
      res,
      tenantId,
      plan: planOf(principal),
      callerId: principal.caller.callerId,
      address: addressBucket(clientAddress(req)),
      authorization: req.headers.authorization,
      feed: undefined,
      answered: false,
      ended: undefined,
      endTimer: undefined,
      queue: undefined,
      queued: 0,
    };
    // Counted before the first await, so concurrent opens cannot all pass a bound.
    const decision = this.admission.admit(stream);
    if (!decision.admitted) throw this.refusal(decision.bound, decision.limit, stream);
    if (decision.shed !== undefined) this.end(decision.shed, 'shed', this.full());
    const expiresIn = principal.expiresAt - now;
    const expires = expiresIn < this.limits.maxAgeMs;
    stream.endTimer = setTimeout(
      () => this.end(stream, expires ? 'credential-expired' : 'max-age', expires ? new ProblemException(AuthProblems['invalid-token'], 'The token expired.', {}, BEARER_CHALLENGE) : this.full()),
      Math.max(0, Math.min(expiresIn, this.limits.maxAgeMs)),
    );
    stream.endTimer.unref();
    // Its access was resolved before this: an announcement heard since may postdate that read.
    if (this.recentChanges.some((c) => c.at > now - RECENT_CHANGE_MS && c.concerns(stream))) this.check(stream);
    let feed: Feed;
    try {
      const environment = await this.environments.resolve(tenantId, requestedEnvironment);
      feed = this.feedOf(tenantId, environment);
      await feed.ready;
    } catch (err) {
      this.release(stream);
      throw err;
    }
    if (stream.ended !== undefined) throw stream.ended;
    if (req.socket.destroyed) {
      this.release(stream);
      return;
    }
    stream.feed = feed;
    stream.answered = true;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('X-Accel-Buffering', 'no');
    req.socket.setNoDelay(true);
    res.flushHeaders();
    feed.streams.add(stream);
    feed.idleSince = 0;
    res.on('close', () => {
      this.release(stream);
      if (feed.streams.size === 0) this.idle(feed);
    });
    const replay = feed.since(lastEventId);
    if (replay === undefined) {
      void this.sendPut(feed, stream);
      return;
    }
    for (const e of replay) this.write(feed, stream, e.text);
    // A comment at once: a resumed client with nothing to replay knows it is current without waiting for a heartbeat.
    this.write(feed, stream, ':\n\n');
  }

  /**
   * Writes the put in pieces, each after the client has taken the previous one, so an unread put
   * costs this process about one piece per stream rather than the whole environment. Events that
   * land meanwhile wait in the stream's queue (bounded like any unsent output) and follow it.
   */
  private async sendPut(feed: Feed, stream: Stream): Promise<void> {
    stream.queue = [];
    const texts = feed.putTexts();
    let piece = `id: ${feed.eventId()}\nevent: put\ndata: {"flags":[`;
    for (let i = 0; i < texts.length; i++) {
      piece += i === 0 ? texts[i] : `,${texts[i]}`;
      if (piece.length >= PUT_PIECE_CHARS) {
        if (!(await this.send(stream, piece))) return;
        piece = '';
      }
    }
    if (!(await this.send(stream, `${piece}]}\n\n:\n\n`))) return;
    const queue = stream.queue;
    stream.queue = undefined;
    stream.queued = 0;
    for (const text of queue) this.write(feed, stream, text);
  }

  /** Writes, and when the client has not taken it all, waits until it has: false when the stream closed first. */
  private send(stream: Stream, text: string): Promise<boolean> {
    if (stream.res.destroyed || stream.res.writableEnded) return Promise.resolve(false);
    if (stream.res.write(text)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        stream.res.off('drain', drained);
        stream.res.off('close', closed);
        resolve(ok);
      };
      const drained = () => done(true);
      const closed = () => done(false);
      stream.res.on('drain', drained);
      stream.res.on('close', closed);
    });
  }

  /** Open streams of a tenant on this process (tests, metrics). */
  streamsOf(tenantId: string): number {
    return this.admission.heldBy(tenantId);
  }

  /** Open streams on this process. */
  held(): number {
    return this.admission.size;
  }

  private refusal(bound: StreamBound, limit: number, s: Stream): ProblemException {
    if (bound === 'process') return this.full();
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
      `This server holds ${this.admission.size} flag-data streams, as many as it may; retry, another replica may take it.`,
      {},
      { 'Retry-After': String(RETRY_AFTER_S) },
    );
  }

  /** The stream no longer counts nor hears anything; a second call does nothing. */
  private release(stream: Stream): void {
    this.admission.release(stream);
    clearTimeout(stream.endTimer);
    stream.feed?.streams.delete(stream);
  }

  /**
   * The server ends a stream: it stops counting at once (a shed stream's place is the new one's),
   * and its client is told why and let go; one not yet answered is refused with `refusal`.
   */
  private end(stream: Stream, reason: StreamEnd, refusal: ProblemException): void {
    if (stream.ended !== undefined) return;
    stream.ended = refusal;
    this.release(stream);
    if (!stream.answered || stream.res.writableEnded) return;
    // Midway through its put the event would land inside the put's data: the client only sees the end.
    if (stream.queue === undefined && !stream.res.destroyed) stream.res.end(`event: end\ndata: {"reason":"${reason}"}\n\n`);
    else stream.res.end();
  }

  /** An access announcement: the streams it concerns are decided again, once every subscriber of the message has heard it. */
  private accessChanged(concerns: (holder: AccessHolder) => boolean): void {
    if (this.destroyed) return;
    const now = Date.now();
    while (this.recentChanges.length > 0 && this.recentChanges[0]!.at <= now - RECENT_CHANGE_MS) this.recentChanges.shift();
    this.recentChanges.push({ at: now, concerns });
    // The revocation list (ClientRevocations) applies a client revocation in its own handler of this message.
    setImmediate(() => {
      for (const s of this.admission.streams()) if (concerns(s)) this.check(s);
    });
  }

  /** Queues the stream's access to be decided again (streams of one token and tenant share one decision). */
  private check(stream: Stream): void {
    if (this.destroyed || stream.ended !== undefined) return;
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
    const live = streams.filter((s) => s.ended === undefined);
    if (live.length === 0) return;
    const { authorization, tenantId } = live[0]!;
    try {
      const principal = await this.access.resolve(authorization, tenantId, FLAG_STREAM_ACCESS);
      // A plan changed (tenantChanged) moves the tenant's streams in or out of those shed first.
      for (const s of live) s.plan = planOf(principal);
    } catch (err) {
      if (err instanceof ProblemException && REFUSED.has(err.problem.status)) {
        this.logger.log(`${live.length} flag-data stream(s) of ${live[0]!.callerId} in tenant ${tenantId} ended: ${err.problem.slug}`);
        for (const s of live) this.end(s, 'access-withdrawn', err);
        return;
      }
      this.logger.warn(`the access of a flag-data stream could not be decided again (${(err as Error).message}); asking again in ${RETRY_READ_MS} ms`);
      setTimeout(() => {
        for (const s of live) this.check(s);
      }, RETRY_READ_MS).unref();
    }
  }

  private feedOf(tenantId: string, environment: string): Feed {
    const k = `${tenantId}/${environment}`;
    let feed = this.feeds.get(k);
    if (feed !== undefined) return feed;
    const created = new Feed(tenantId, environment);
    created.ready = (async () => {
      // Held by the flag store from now on, so its changes are heard (and re-read) at once.
      await this.snapshots.view(tenantId, environment);
      for (const f of await this.snapshots.served(tenantId, environment)) created.flags.set(f.key, { fingerprint: f.fingerprint, text: JSON.stringify(f.definition) });
    })();
    created.ready.catch(() => {
      if (this.feeds.get(k) === created) this.feeds.delete(k);
    });
    this.feeds.set(k, created);
    feed = created;
    return feed;
  }

  private heard(change: FlagSetChanged): void {
    const feed = this.feeds.get(`${change.tenantId}/${change.environment}`);
    if (feed === undefined) return;
    if (change.keys === undefined) feed.pendingAll = true;
    else {
      for (const row of change.flags) feed.pendingRows.set(row.key, row);
      for (const key of change.removed) feed.pendingRows.set(key, null);
    }
    this.schedule(feed, COALESCE_MS);
  }

  private schedule(feed: Feed, delayMs: number): void {
    if (feed.flushTimer !== undefined || feed.flushing) return;
    feed.flushTimer = setTimeout(() => {
      feed.flushTimer = undefined;
      void this.flush(feed);
    }, delayMs);
  }

  /**
   * Sends what changed (once for every stream of the feed) as at most one patch and one delete:
   * the rows the store read, or, after a whole new set, every flag read again.
   */
  private async flush(feed: Feed): Promise<void> {
    feed.flushing = true;
    const all = feed.pendingAll;
    const pending = feed.pendingRows;
    feed.pendingAll = false;
    feed.pendingRows = new Map();
    let retry = false;
    try {
      await feed.ready;
      // A whole read covers the rows heard before it.
      const rows: Array<StoredFlag | null> = all ? await this.snapshots.served(feed.tenantId, feed.environment) : [...pending.values()];
      const keys = all ? undefined : [...pending.keys()];
      const found = new Set<string>();
      const changed: string[] = [];
      for (const f of rows) {
        if (f === null) continue;
        found.add(f.key);
        if (feed.flags.get(f.key)?.fingerprint === f.fingerprint) continue;
        const text = JSON.stringify(f.definition);
        feed.flags.set(f.key, { fingerprint: f.fingerprint, text });
        changed.push(text);
      }
      const removed = (keys ?? [...feed.flags.keys()]).filter((key) => !found.has(key) && feed.flags.has(key));
      for (const key of removed) feed.flags.delete(key);
      if (changed.length > 0) this.broadcast(feed, feed.append('patch', `{"flags":[${changed.join(',')}]}`));
      if (removed.length > 0) this.broadcast(feed, feed.append('delete', JSON.stringify({ keys: removed })));
    } catch (err) {
      // Postgres away: the changes stay pending and are read again; streams keep their heartbeats meanwhile.
      if (all) feed.pendingAll = true;
      for (const [key, row] of pending) if (!feed.pendingRows.has(key)) feed.pendingRows.set(key, row);
      retry = true;
      this.logger.warn(`flag changes could not be read for the flag-data stream: ${(err as Error).message}`);
    } finally {
      feed.flushing = false;
    }
    if (feed.pendingAll || feed.pendingRows.size > 0) this.schedule(feed, retry ? RETRY_READ_MS : COALESCE_MS);
  }

  private broadcast(feed: Feed, text: string): void {
    for (const s of feed.streams) this.write(feed, s, text);
  }

  /** Writes unless the client has left more than the bound unread: a slow consumer is closed, not buffered for. */
  private write(feed: Feed, stream: Stream, text: string): void {
    const unsent = stream.queue !== undefined ? stream.queued : stream.res.writableLength;
    if (unsent > this.limits.maxBuffer) {
      this.logger.warn(`a flag-data stream of tenant ${feed.tenantId} was closed: its client left ${unsent} bytes unread`);
      stream.res.destroy();
      return;
    }
    if (stream.queue !== undefined) {
      stream.queue.push(text);
      stream.queued += text.length;
    } else stream.res.write(text);
  }

  private idle(feed: Feed): void {
    feed.idleSince = Date.now();
    const idle = [...this.feeds.values()].filter((f) => f.streams.size === 0);
    if (idle.length > MAX_IDLE_FEEDS) {
      idle.sort((a, b) => a.idleSince - b.idleSince);
      for (const f of idle.slice(0, idle.length - MAX_IDLE_FEEDS)) this.drop(f);
    }
  }

  private drop(feed: Feed): void {
    clearTimeout(feed.flushTimer);
    const k = `${feed.tenantId}/${feed.environment}`;
    if (this.feeds.get(k) === feed) this.feeds.delete(k);
  }

  /** Heartbeats, idle feeds past their time, and each feed's set kept held. */
  private tick(): void {
    const now = Date.now();
    for (const feed of [...this.feeds.values()]) {
      if (feed.streams.size === 0) {
        if (now - feed.idleSince > IDLE_FEED_MS) this.drop(feed);
        continue;
      }
      // Keeps the set held (a least-recently-used store may drop it) and lets it reconcile with
      // Postgres when due, which heals a change announcement lost while Redis was away.
      this.snapshots.view(feed.tenantId, feed.environment).catch(() => undefined);
      for (const s of [...feed.streams]) this.write(feed, s, ':\n\n');
    }
  }
}
