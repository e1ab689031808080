import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { FlagSetChanged, FlagSetView, FlagStore } from '@flagship/flag-store';
import { Coalescer } from '@flagship/batching';
import { type ReplayEntry, ReplayLog, type SseHub } from '@flagship/sse';

/** Changes heard within this are sent as one event (a burst of PATCHes, an import). */
const COALESCE_MS = 25;
/** The replay window of a tenant-environment: the latest events up to these bounds. */
const REPLAY = { maxEvents: 512, maxBytes: 512 * 1024 };
/** A group with no stream is kept this long, so a client that reconnects can resume from it... */
const IDLE_GROUP_MS = 120_000;
/** ...and at most this many of them; the idle longest goes first. */
const MAX_IDLE_GROUPS = 100;
/** After a failed read (Postgres away), the next try. */
const RETRY_READ_MS = 1000;
/** A put is written in pieces of about this many characters, each once the client has read the one before. */
const PUT_PIECE_CHARS = 64 * 1024;
/** Before a segment's key among a group's pending keys (no flag key starts with it: keys start with a letter or digit). */
const SEGMENT = '\u0000';

/** A stream as a group writes to it. */
export interface GroupedStream {
  /** Its put(s) under way: a later put follows the one before. */
  putting?: Promise<unknown>;
}

/** One tenant-environment's events for its streams. The flags themselves are the store's (`view.rows`). */
export class StreamGroup<S extends GroupedStream = GroupedStream> {
  /** A new epoch when the group starts over: ids of another say nothing here. */
  epoch = randomBytes(6).toString('base64url');
  log = new ReplayLog(REPLAY);
  readonly streams = new Set<S>();
  /** The store's set this group follows; the store changes it in place, or replaces it (the group then starts over). */
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

  /** The events after `lastEventId`, or undefined when this group cannot tell (another epoch, out of the window). */
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
 * The flag-data streams' groups, one per tenant-environment streamed: each follows the flag store's
 * held set (its changes, heard from any replica, coalesced for COALESCE_MS and sent once as a patch
 * and a delete whatever the number of streams) and keeps the replay window. While a group has
 * streams the store holds its set; an idle group lets go and is kept a while for resumes, starting
 * over when the store has since dropped or replaced the set (its changes were not all heard).
 */
export class FlagStreamGroups<S extends GroupedStream> {
  private readonly logger = new Logger('FlagStreams');
  private readonly groups = new Map<string, StreamGroup<S>>();
  private readonly stopListening: () => void;

  constructor(
    private readonly store: FlagStore,
    private readonly hub: Pick<SseHub<S, string>, 'broadcast' | 'writePaced'>,
  ) {
    if (!store.keepsJson) throw new Error("the flag-data stream sends the flag store's JSON: its FlagStore needs keepJson");
    this.stopListening = store.onChange((change) => void this.groups.get(`${change.tenantId}/${change.environment}`)?.changes?.add(change));
  }

  /** The group of a tenant-environment with its set as held now; rejects as the store does (Postgres away, a set too large). */
  async join(tenantId: string, environment: string): Promise<{ group: StreamGroup<S>; view: FlagSetView }> {
    const group = this.groupOf(tenantId, environment);
    return { group, view: await this.current(group) };
  }

  /** `s` is answered: it hears the group's events from now on. */
  listen(group: StreamGroup<S>, s: S): void {
    group.streams.add(s);
    clearTimeout(group.idleTimer);
    group.idleTimer = undefined;
  }

  /** A stream left: a group with none lets go of the store's hold and is kept a while for a client that resumes. */
  leave(group: StreamGroup<S>, s: S): void {
    group.streams.delete(s);
    const k = `${group.tenantId}/${group.environment}`;
    if (group.streams.size > 0 || this.groups.get(k) !== group) return;
    group.release?.();
    group.release = undefined;
    group.idleTimer = setTimeout(() => this.drop(group), IDLE_GROUP_MS).unref();
    // Moved last: the Map then keeps idle groups in the order they went idle.
    this.groups.delete(k);
    this.groups.set(k, group);
    const idle = [...this.groups.values()].filter((f) => f.streams.size === 0 && f.idleTimer !== undefined);
    for (const f of idle.slice(0, Math.max(0, idle.length - MAX_IDLE_GROUPS))) this.drop(f);
  }

  /** The put, in pieces at the pace the client reads (the kit queues what lands meanwhile): every flag served and every segment, as the store holds their JSON. */
  sendPut(group: StreamGroup<S>, s: S, view: FlagSetView): Promise<unknown> {
    const texts: string[] = [];
    for (const row of view.rows.values()) if (row.json !== undefined) texts.push(row.json);
    const segments: string[] = [];
    for (const held of view.segments.values()) if (held.json !== undefined) segments.push(held.json);
    const id = group.eventId();
    function* pieces(): Generator<string> {
      let piece = `id: ${id}\nevent: put\ndata: {"flags":[`;
      for (let i = 0; i < texts.length; i++) {
        piece += i === 0 ? texts[i] : `,${texts[i]}`;
        if (piece.length >= PUT_PIECE_CHARS) {
          yield piece;
          piece = '';
        }
      }
      // Segments are few (the segment quotas): the last piece.
      yield `${piece}],"segments":[${segments.join(',')}]}\n\n:\n\n`;
    }
    s.putting = this.hub.writePaced(s, pieces());
    return s.putting;
  }

  close(): void {
    this.stopListening();
    for (const group of [...this.groups.values()]) this.drop(group);
  }

  private groupOf(tenantId: string, environment: string): StreamGroup<S> {
    const k = `${tenantId}/${environment}`;
    const found = this.groups.get(k);
    if (found !== undefined) {
      found.release ??= this.store.hold(tenantId, environment);
      return found;
    }
    const group = new StreamGroup<S>(tenantId, environment);
    // Held by the store from now on, so its changes are heard (and re-read) at once.
    group.release = this.store.hold(tenantId, environment);
    group.changes = new Coalescer<FlagSetChanged, Set<string>>({
      windowMs: COALESCE_MS,
      // A whole new set (no keys) shows in the set the store holds: current() starts the group over.
      fold: (keys = new Set(), change) => {
        for (const key of change.keys ?? []) keys.add(key);
        for (const segment of change.segments ?? []) keys.add(SEGMENT + segment.key);
        for (const key of change.removedSegments ?? []) keys.add(SEGMENT + key);
        return keys;
      },
      emit: (keys) => this.flush(group, keys),
      retry: {
        afterMs: RETRY_READ_MS,
        merge: (failed, since) => new Set([...failed, ...(since ?? [])]),
        // Postgres away: the changes stay pending; streams keep their heartbeats meanwhile.
        onError: (err) => this.logger.warn(`flag changes could not be read for the flag-data stream: ${(err as Error).message}`),
      },
    });
    group.ready = this.store.view(tenantId, environment).then((view) => (group.view = view));
    group.ready.catch(() => {
      if (this.groups.get(k) === group) this.drop(group);
    });
    this.groups.set(k, group);
    return group;
  }

  /**
   * The set the group follows, as the store holds it now. When the store holds another (read anew
   * after it was dropped), the changes between were not all heard: the group starts over with a new
   * epoch, and its streams get a fresh put.
   */
  private async current(group: StreamGroup<S>): Promise<FlagSetView> {
    await group.ready;
    const view = this.store.peek(group.tenantId, group.environment, { stale: true }) ?? (await this.store.view(group.tenantId, group.environment));
    if (view !== group.view) {
      group.startOver(view);
      for (const s of group.streams) s.putting = (s.putting ?? Promise.resolve()).then(() => this.sendPut(group, s, view));
    }
    return view;
  }

  /** Sends what changed, once for every stream of the group, as at most one patch and one delete, from the store's rows. */
  private async flush(group: StreamGroup<S>, keys: Set<string>): Promise<void> {
    // An idle group whose set the store let go has missed changes: a client that resumes gets a put.
    if (group.release === undefined && this.store.peek(group.tenantId, group.environment, { stale: true }) !== group.view) return this.drop(group);
    const view = await this.current(group);
    const changed: string[] = [];
    const removed: string[] = [];
    const changedSegments: string[] = [];
    const removedSegments: string[] = [];
    for (const key of keys) {
      if (key.startsWith(SEGMENT)) {
        const json = view.segments.get(key.slice(SEGMENT.length))?.json;
        if (json !== undefined) changedSegments.push(json);
        else removedSegments.push(key.slice(SEGMENT.length));
        continue;
      }
      const json = view.rows.get(key)?.json;
      if (json !== undefined) changed.push(json);
      else removed.push(key);
    }
    if (changed.length > 0 || changedSegments.length > 0) {
      const segments = changedSegments.length > 0 ? `,"segments":[${changedSegments.join(',')}]` : '';
      this.hub.broadcast(group.append('patch', `{"flags":[${changed.join(',')}]${segments}}`), group.streams);
    }
    if (removed.length > 0 || removedSegments.length > 0) {
      this.hub.broadcast(group.append('delete', JSON.stringify({ keys: removed, ...(removedSegments.length > 0 ? { segmentKeys: removedSegments } : {}) })), group.streams);
    }
  }

  private drop(group: StreamGroup<S>): void {
    group.changes?.close();
    group.release?.();
    group.release = undefined;
    clearTimeout(group.idleTimer);
    const k = `${group.tenantId}/${group.environment}`;
    if (this.groups.get(k) === group) this.groups.delete(k);
  }
}
