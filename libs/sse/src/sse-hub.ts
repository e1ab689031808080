import { Admission, type AdmissionBound, type AdmissionDecision } from './admission';

/** What a stream is written to: node's ServerResponse (Express' too) is one. */
export interface SseSink {
  readonly writableLength: number;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
  write(chunk: string | Buffer): boolean;
  end(chunk?: string | Buffer): unknown;
  destroy(): unknown;
  once(event: 'close' | 'drain', listener: () => void): unknown;
  off(event: 'close' | 'drain', listener: () => void): unknown;
}

export interface SseHubOptions<S, R extends string> {
  /** Who may hold a stream (Admission), in the order checked. */
  bounds: readonly AdmissionBound<S>[];
  /** A stream whose client has left more than this unread (queued in this process) is cut off, not buffered for. */
  maxBufferedBytes: number;
  /** A comment this often keeps proxies from closing an idle stream and finds dead peers. */
  heartbeatMs: number;
  /** The heartbeat's frame (default `:\n\n`). */
  heartbeat?: string | Buffer;
  /** What tells a client why the server ended its stream; without it the stream just ends. */
  endFrame?: (reason: R) => string | Buffer;
  /** A stream cut off for not reading (for a log line). */
  onCutOff?: (s: S, unsent: number) => void;
}

interface Entry<R> {
  sink: SseSink | undefined;
  deadline: { at: number; reason: R } | undefined;
  /** While a paced write is under way: what is written meanwhile waits here, after it. */
  paced: { frames: Array<string | Buffer>; bytes: number } | undefined;
}

/** setTimeout's longest delay; a later deadline is armed again when this one fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The server-sent-event streams of a process, whatever they carry: admission within the bounds
 * (counted from `admit`, before the stream is answered), one heartbeat for all, writes that cut off
 * a client which does not read rather than buffer for it, a paced write for a large first message,
 * and ends: by the server (a reason, told by `endFrame`), at a deadline per stream (a token's expiry,
 * a maximum age: one timer for the earliest), or for every stream a predicate picks. A client told
 * nothing reconnects, with Last-Event-ID, and is admitted again or not.
 *
 * `S` is the holder's own stream record (what the bounds read); `R` its vocabulary of end reasons.
 */
export class SseHub<S extends object, R extends string> {
  private readonly admission: Admission<S>;
  private readonly entries = new Map<S, Entry<R>>();
  private readonly endedWith = new WeakMap<S, R>();
  private readonly deadlines = new Map<number, Set<S>>();
  private readonly heartbeatFrame: string | Buffer;
  private attached = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private deadlineAt = Infinity;
  private closed = false;
  /** Streams cut off because their client did not read. */
  cutOff = 0;
  /** Streams the server ended, by reason. */
  readonly ends = new Map<R, number>();

  constructor(private readonly options: SseHubOptions<S, R>) {
    this.admission = new Admission(options.bounds);
    this.heartbeatFrame = options.heartbeat ?? ':\n\n';
  }

  /** Streams admitted and not yet released (answered or not). */
  get size(): number {
    return this.admission.size;
  }

  /** Streams held under `bound` for `key`. */
  count(bound: string, key: string): number {
    return this.admission.count(bound, key);
  }

  /** Admitted streams, oldest first. */
  streams(): IterableIterator<S> {
    return this.admission.streams();
  }

  /**
   * Counts `s` at once, or says which bound refused it (`closed` after `close`). A stream admitted
   * in place of another (`shed`) leaves that one for the caller to `end`.
   */
  admit(s: S): AdmissionDecision<S> {
    if (this.closed) return { admitted: false, bound: 'closed', limit: 0 };
    const decision = this.admission.admit(s);
    if (decision.admitted) this.entries.set(s, { sink: undefined, deadline: undefined, paced: undefined });
    return decision;
  }

  /** Why the server ended `s` (`end`, a deadline, a shed), if it did: an unanswered stream is refused with it. */
  endedWhy(s: S): R | undefined {
    return this.endedWith.get(s);
  }

  /**
   * `s`, admitted, is answered on `sink` (its head written): it gets heartbeats and writes until it
   * closes or is ended. False when it is no longer held (ended meanwhile): the caller refuses it.
   */
  attach(s: S, sink: SseSink): boolean {
    const entry = this.entries.get(s);
    if (entry === undefined || entry.sink !== undefined) return false;
    entry.sink = sink;
    this.attached++;
    sink.once('close', () => this.release(s));
    this.heartbeat ??= setInterval(this.beat, this.options.heartbeatMs).unref();
    return true;
  }

  /** Ends `s` with `reason` at `at` (ms since the epoch), unless it is gone before. */
  deadline(s: S, at: number, reason: R): void {
    const entry = this.entries.get(s);
    if (entry === undefined) return;
    this.unschedule(s, entry);
    entry.deadline = { at, reason };
    const due = this.deadlines.get(at);
    if (due) due.add(s);
    else this.deadlines.set(at, new Set([s]));
    if (at < this.deadlineAt) this.armDeadline();
  }

  /** Writes `frame` to `s` (after a paced write under way), unless its client has left more than the bound unread: then it is cut off. */
  write(s: S, frame: string | Buffer): void {
    const entry = this.entries.get(s);
    const sink = entry?.sink;
    if (sink === undefined || sink.destroyed || sink.writableEnded) return;
    const unsent = entry!.paced !== undefined ? entry!.paced.bytes : sink.writableLength;
    if (unsent > this.options.maxBufferedBytes) {
      this.cutOff++;
      this.options.onCutOff?.(s, unsent);
      sink.destroy();
      return;
    }
    if (entry!.paced !== undefined) {
      entry!.paced.frames.push(frame);
      entry!.paced.bytes += frame.length;
    } else sink.write(frame);
  }

  /** One frame, shared, to every answered stream (or those given). */
  broadcast(frame: string | Buffer, to: Iterable<S> = this.entries.keys()): void {
    for (const s of to) this.write(s, frame);
  }

  /**
   * Writes `pieces` each once the client has taken the one before, so a large message (a snapshot)
   * costs this process about one piece per stream rather than the whole of it; what is written to
   * `s` meanwhile waits (bounded like any unsent output) and follows. False when the stream closed first.
   */
  async writePaced(s: S, pieces: Iterable<string | Buffer>): Promise<boolean> {
    const entry = this.entries.get(s);
    if (entry?.sink === undefined || entry.paced !== undefined) return false;
    const sink = entry.sink;
    entry.paced = { frames: [], bytes: 0 };
    for (const piece of pieces) {
      if (!(await drained(sink, sink.destroyed || sink.writableEnded ? undefined : sink.write(piece)))) return false;
    }
    const { frames } = entry.paced;
    entry.paced = undefined;
    for (const frame of frames) this.write(s, frame);
    return true;
  }

  /**
   * The server ends `s`: it stops counting at once (a shed stream's place is the new one's) and its
   * client is told why (`endFrame`) and let go; one that has left bytes unread, or is mid-way through
   * a paced write, is cut off instead. One not yet answered keeps the reason for its refusal.
   */
  end(s: S, reason: R): void {
    if (this.endedWith.has(s)) return;
    const entry = this.entries.get(s);
    this.endedWith.set(s, reason);
    this.ends.set(reason, (this.ends.get(reason) ?? 0) + 1);
    this.release(s);
    const sink = entry?.sink;
    if (sink === undefined || sink.destroyed || sink.writableEnded) return;
    const frame = this.options.endFrame?.(reason);
    if (entry!.paced !== undefined || (frame === undefined && sink.writableLength > 0)) sink.destroy();
    else sink.end(frame);
  }

  /** Ends every stream `pick` chooses. */
  endWhere(pick: (s: S) => boolean, reason: R): void {
    for (const s of [...this.admission.streams()]) if (pick(s)) this.end(s, reason);
  }

  /** `s` no longer counts nor hears anything (closed by its client); a second call does nothing. */
  release(s: S): void {
    this.admission.release(s);
    const entry = this.entries.get(s);
    if (entry === undefined) return;
    this.entries.delete(s);
    this.unschedule(s, entry);
    if (entry.sink !== undefined && --this.attached === 0 && this.heartbeat !== undefined) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }

  /** Ends every stream with `reason` and refuses new ones (shutdown: an HTTP server cannot close while they are open). */
  close(reason: R): void {
    this.closed = true;
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    for (const s of [...this.admission.streams()]) this.end(s, reason);
  }

  private readonly beat = (): void => this.broadcast(this.heartbeatFrame);

  private unschedule(s: S, entry: Entry<R>): void {
    if (entry.deadline === undefined) return;
    const due = this.deadlines.get(entry.deadline.at);
    due?.delete(s);
    if (due?.size === 0) this.deadlines.delete(entry.deadline.at);
    entry.deadline = undefined;
  }

  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    let next = Infinity;
    for (const at of this.deadlines.keys()) if (at < next) next = at;
    this.deadlineAt = next;
    if (next === Infinity || this.closed) return;
    this.deadlineTimer = setTimeout(this.expire, Math.min(Math.max(0, next - Date.now()), MAX_TIMER_MS)).unref();
  }

  private readonly expire = (): void => {
    const now = Date.now();
    for (const [at, due] of [...this.deadlines]) {
      if (at > now) continue;
      for (const s of [...due]) this.end(s, this.entries.get(s)!.deadline!.reason);
    }
    this.armDeadline();
  };
}

/** True once `sink` has taken what was written (`wrote`: write's answer; undefined: nothing could be written); false when it closed first. */
function drained(sink: SseSink, wrote: boolean | undefined): Promise<boolean> {
  if (wrote === undefined) return Promise.resolve(false);
  if (wrote) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      sink.off('drain', onDrain);
      sink.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    sink.once('drain', onDrain);
    sink.once('close', onClose);
  });
}
