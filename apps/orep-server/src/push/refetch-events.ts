import { Coalescer } from '@flagship/batching';
import { type ReplayEntry, ReplayLog } from '@flagship/sse';
import type { FlagSource } from '../sources/flag-source';

/** One OFREP `refetchEvaluation` event as written on the wire, with the id it carries. */
export interface RefetchEvent extends ReplayEntry {
  /** The change's time in ms since the epoch, made strictly increasing in this process. */
  readonly id: number;
  /** `id: ...\nevent: message\ndata: {...}\n\n`, written once and shared by every connection. */
  readonly frame: Buffer;
}

export interface RefetchEventsOptions {
  /** Changes arriving within this many ms of the first are told as one event. */
  coalesceMs: number;
  /** Replay window: at most this many events... */
  historyMax: number;
  /** ...and none older than this (ms). */
  historyMaxAgeMs: number;
  /** A stream opened with no Last-Event-ID is sent the last event when it is at most this old (ms). */
  freshConnectMs: number;
}

export const REFETCH_EVENTS_DEFAULTS: RefetchEventsOptions = { coalesceMs: 10, historyMax: 256, historyMaxAgeMs: 5 * 60_000, freshConnectMs: 10_000 };

/**
 * The served flags' versions, as OFREP ADR-0008 tells them to clients: the source's changes (its one
 * subscription, the flag store's own listener in Postgres mode), coalesced over `coalesceMs`, each
 * batch one `refetchEvaluation` event broadcast to every stream, whose `id` is the time of the change
 * in ms since the epoch (strictly increasing here), whose `etag` is that id quoted (the flag set's
 * version, which the bulk route compares with `flagConfigEtag`) and whose `lastModified` is that time
 * in Unix seconds (the ADR's recommended form).
 *
 * Ids are times rather than counters so that a Last-Event-ID keeps its meaning across a restart
 * and between replicas: one older than anything kept here gets a single event naming the current
 * version (the client cannot be told exactly what it missed, only that it must re-fetch), one
 * within the window gets the events after it, one at or after the current version gets nothing.
 *
 * A stream opened with no Last-Event-ID is a provider's first, right after its bulk fetch; a change
 * applied between that fetch and this connection would reach it through no event at all. So it is
 * sent the last event when that is recent (`freshConnectMs`): at worst one re-fetch more, which
 * If-None-Match answers with a 304 when the fetch had already seen the change.
 */
export class RefetchEvents {
  private readonly log: ReplayLog<RefetchEvent>;
  private readonly changes: Coalescer<number, number>;
  private readonly unsubscribe: () => void;

  constructor(
    source: FlagSource,
    streams: { broadcast(frame: Buffer): void },
    private readonly options: RefetchEventsOptions = REFETCH_EVENTS_DEFAULTS,
  ) {
    this.log = new ReplayLog({ maxEvents: options.historyMax, maxAgeMs: options.historyMaxAgeMs }, source.liveSet?.updatedAt ?? 0);
    this.changes = new Coalescer<number, number>({
      windowMs: options.coalesceMs,
      fold: (latest, at) => Math.max(latest ?? 0, at),
      emit: (at) => streams.broadcast(this.append(at).frame),
    });
    this.unsubscribe = source.onChange((change) => void this.changes.add(change.at));
  }

  /** The version of the flags being served: the id of the last change (0 before any). */
  get version(): number {
    return this.log.lastId;
  }

  /** The ETag form of `version` (what events carry as `etag`). */
  get etag(): string {
    return `"${this.version}"`;
  }

  /** What a client that last saw `lastEventId` (the Last-Event-ID header) must be sent now. */
  replayAfter(lastEventId: string | undefined, now = Date.now()): RefetchEvent[] {
    if (lastEventId === undefined) {
      const last = this.log.newest;
      return last !== undefined && last.id >= now - this.options.freshConnectMs ? [last] : [];
    }
    const last = /^[0-9]{1,16}$/.test(lastEventId.trim()) ? Number(lastEventId.trim()) : -1;
    if (last >= this.version) return [];
    this.log.trim(now);
    const oldest = this.log.oldest;
    if (last >= 0 && oldest !== undefined && last >= oldest.id) return this.log.after(last, now) ?? [];
    // Unknown, or older than the window: one event naming the current version.
    return this.version === 0 ? [] : [eventFor(this.version)];
  }

  close(): void {
    this.unsubscribe();
    this.changes.close();
  }

  private append(at: number): RefetchEvent {
    const event = eventFor(Math.max(this.version + 1, at));
    this.log.append(event);
    this.log.trim(Date.now());
    return event;
  }
}

function eventFor(id: number): RefetchEvent {
  const data = JSON.stringify({ type: 'refetchEvaluation', etag: `"${id}"`, lastModified: Math.floor(id / 1000) });
  return { id, at: id, frame: Buffer.from(`id: ${id}\nevent: message\ndata: ${data}\n\n`) };
}
