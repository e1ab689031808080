/** One event as written on the wire, under the ordinal id the log knows it by. */
export interface ReplayEntry {
  /** Increasing from one event to the next; what the holder makes of it on the wire is its own. */
  readonly id: number;
  /** The event as written, shared by every stream. */
  readonly frame: string | Buffer;
  /** When it was appended (ms since the epoch), for `maxAgeMs`. */
  readonly at: number;
}

export interface ReplayLogBounds {
  /** At most this many events... */
  maxEvents: number;
  /** ...taking at most this many bytes (frame lengths)... */
  maxBytes?: number;
  /** ...none older than this (ms). */
  maxAgeMs?: number;
}

/**
 * The latest events of a stream, bounded, for a client that reconnects with Last-Event-ID: it gets
 * the events after the one it names when the log still holds every one of them, and the holder
 * sends it something whole otherwise (a snapshot, or one event naming the current version).
 */
export class ReplayLog<E extends ReplayEntry = ReplayEntry> {
  private readonly entries: E[] = [];
  private bytes = 0;
  private floor: number;
  private last: number;

  /** `startId`: the id before the first event, which a client current at the start names. */
  constructor(
    private readonly bounds: ReplayLogBounds,
    startId = 0,
  ) {
    this.floor = startId;
    this.last = startId;
  }

  /** The id of the newest event appended (the start id before any). */
  get lastId(): number {
    return this.last;
  }

  get size(): number {
    return this.entries.length;
  }

  /** What the events held take (frame lengths). */
  get byteLength(): number {
    return this.bytes;
  }

  get oldest(): E | undefined {
    return this.entries[0];
  }

  get newest(): E | undefined {
    return this.entries[this.entries.length - 1];
  }

  /** Appends `entry` (its id past every one before) and drops what the bounds no longer allow, oldest first. */
  append(entry: E): void {
    if (entry.id <= this.last) throw new Error(`replay log ids must increase: ${entry.id} after ${this.last}`);
    this.last = entry.id;
    this.entries.push(entry);
    this.bytes += entry.frame.length;
    this.trim(entry.at);
  }

  /** The events after `id`, or undefined when the log cannot vouch for them all (older than what it holds, or ahead of it). */
  after(id: number, now = Date.now()): E[] | undefined {
    this.trim(now);
    if (!(id >= this.floor && id <= this.last)) return undefined;
    let i = this.entries.length;
    while (i > 0 && this.entries[i - 1]!.id > id) i--;
    return this.entries.slice(i);
  }

  /** Drops what is past the bounds at `now`. */
  trim(now = Date.now()): void {
    const { maxEvents, maxBytes = Infinity, maxAgeMs = Infinity } = this.bounds;
    let drop = 0;
    let bytes = this.bytes;
    const tooOld = now - maxAgeMs;
    while (drop < this.entries.length) {
      const e = this.entries[drop]!;
      if (this.entries.length - drop <= maxEvents && bytes <= maxBytes && e.at >= tooOld) break;
      bytes -= e.frame.length;
      drop++;
    }
    if (drop === 0) return;
    this.floor = this.entries[drop - 1]!.id;
    this.entries.splice(0, drop);
    this.bytes = bytes;
  }
}
