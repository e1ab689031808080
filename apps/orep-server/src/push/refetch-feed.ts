import type { FlagSource } from '../sources/flag-source';

/** One OFREP `refetchEvaluation` event as written on the wire, with the id it carries. */
export interface RefetchEvent {
  /** The change's time in ms since the epoch, made strictly increasing in this process. */
  id: number;
  /** `id: ...\nevent: message\ndata: {...}\n\n`, written once and shared by every connection. */
  frame: Buffer;
}

export interface RefetchFeedOptions {
  /** Changes arriving within this many ms of the first are told as one event. */
  coalesceMs: number;
  /** Replay window: at most this many events... */
  historyMax: number;
  /** ...and none older than this (ms). */
  historyMaxAgeMs: number;
  /** A stream opened with no Last-Event-ID is sent the last event when it is at most this old (ms). */
  freshConnectMs: number;
}

export const REFETCH_FEED_DEFAULTS: RefetchFeedOptions = { coalesceMs: 10, historyMax: 256, historyMaxAgeMs: 5 * 60_000, freshConnectMs: 10_000 };

/**
 * The served flags' versions, as OFREP ADR-0008 tells them to clients: every change of the source
 * (onChange), coalesced over `coalesceMs`, becomes one `refetchEvaluation` event whose `id` is the
 * time of the change in ms since the epoch (strictly increasing here), whose `etag` is that id
 * quoted (the flag set's version, which the bulk route compares with `flagConfigEtag`) and whose
 * `lastModified` is that time in Unix seconds (the ADR's recommended form).
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
export class RefetchFeed {
  private readonly history: RefetchEvent[] = [];
  private currentId = 0;
  private pendingAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    source: FlagSource,
    private readonly publish: (event: RefetchEvent) => void,
    private readonly options: RefetchFeedOptions = REFETCH_FEED_DEFAULTS,
  ) {
    const loaded = source.snapshot?.updatedAt;
    if (loaded !== undefined) this.currentId = loaded;
    this.unsubscribe = source.onChange((change) => this.changed(change.at));
  }

  /** The version of the flags being served: the id of the last change (0 before any). */
  get version(): number {
    return this.currentId;
  }

  /** The ETag form of `version` (what events carry as `etag`). */
  get etag(): string {
    return `"${this.currentId}"`;
  }

  /** What a client that last saw `lastEventId` (the Last-Event-ID header) must be sent now. */
  replayAfter(lastEventId: string | undefined): RefetchEvent[] {
    if (lastEventId === undefined) {
      const last = this.history[this.history.length - 1];
      return last !== undefined && last.id >= Date.now() - this.options.freshConnectMs ? [last] : [];
    }
    const last = /^[0-9]{1,16}$/.test(lastEventId.trim()) ? Number(lastEventId.trim()) : -1;
    if (last >= this.currentId) return [];
    this.trim(Date.now());
    const oldest = this.history[0];
    if (last >= 0 && oldest !== undefined && last >= oldest.id) return this.history.filter((e) => e.id > last);
    // Unknown, or older than the window: one event naming the current version.
    return this.currentId === 0 ? [] : [this.eventFor(this.currentId)];
  }

  close(): void {
    this.unsubscribe();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private changed(at: number): void {
    this.pendingAt = Math.max(this.pendingAt, at);
    this.timer ??= setTimeout(this.flush, this.options.coalesceMs);
  }

  private readonly flush = (): void => {
    this.timer = undefined;
    const id = Math.max(this.currentId + 1, this.pendingAt);
    this.pendingAt = 0;
    this.currentId = id;
    const event = this.eventFor(id);
    this.history.push(event);
    this.trim(Date.now());
    this.publish(event);
  };

  private trim(now: number): void {
    const tooOld = now - this.options.historyMaxAgeMs;
    let drop = Math.max(0, this.history.length - this.options.historyMax);
    while (drop < this.history.length && this.history[drop]!.id < tooOld) drop++;
    if (drop > 0) this.history.splice(0, drop);
  }

  private eventFor(id: number): RefetchEvent {
    const data = JSON.stringify({ type: 'refetchEvaluation', etag: `"${id}"`, lastModified: Math.floor(id / 1000) });
    return { id, frame: Buffer.from(`id: ${id}\nevent: message\ndata: ${data}\n\n`) };
  }
}
