export interface CoalescerOptions<T, A> {
  /** Items gather this long after the first of a batch; 0: until the rest of this event-loop turn has run (setImmediate). */
  windowMs: number;
  /** Folds an item into what has gathered (undefined for the first of a batch). */
  fold: (gathered: A | undefined, item: T) => A;
  /** Emits one batch; one emit at a time: items that come meanwhile gather for the next. */
  emit: (gathered: A) => void | Promise<void>;
  /**
   * A failed emit is tried again `afterMs` later, `merge` folding what gathered since onto the
   * failed batch. Without it, a failure rejects the batch's `add`s and the batch is dropped.
   */
  /** The window's timer does not keep the process alive (its owner flushes at shutdown). */
  unref?: boolean;
  retry?: { afterMs: number; merge: (failed: A, since: A | undefined) => A; onError?: (err: unknown) => void };
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Gathers items over a window (or a turn of the event loop) and emits them once: a burst of flag
 * changes is one event to every stream, a burst of settlements one statement.
 */
export class Coalescer<T, A> {
  private gathered: A | undefined;
  private pending = false;
  private waiters: Waiter[] = [];
  private timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private emitting: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: CoalescerOptions<T, A>) {}

  /** Whether anything is gathered and not yet emitted. */
  get idle(): boolean {
    return !this.pending && this.emitting === undefined;
  }

  /**
   * Adds `item` to the batch gathering now. Resolves once that batch is emitted; rejects with the
   * emit's error when it failed for good (ignoring the promise is safe: it is never left unhandled).
   */
  add(item: T): Promise<void> {
    if (this.closed) {
      const refused = Promise.reject(new Error('closed before it was emitted'));
      refused.catch(() => undefined);
      return refused;
    }
    this.gathered = this.options.fold(this.pending ? this.gathered : undefined, item);
    this.pending = true;
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    done.catch(() => undefined);
    this.schedule(this.options.windowMs);
    return done;
  }

  /**
   * Adds `item` like `add`, keeping no promise for it: for a hot path that never waits on the emit
   * (a waiter per item would grow with the traffic of a whole window). A closed coalescer drops it.
   */
  offer(item: T): void {
    if (this.closed) return;
    this.gathered = this.options.fold(this.pending ? this.gathered : undefined, item);
    this.pending = true;
    this.schedule(this.options.windowMs);
  }

  /** Emits what has gathered now, once an emit under way is done (shutdown, a test). */
  async flush(): Promise<void> {
    while (this.emitting !== undefined || this.pending) {
      if (this.emitting !== undefined) await this.emitting;
      else {
        this.cancel();
        await this.run();
      }
    }
  }

  /** Stops: nothing more is emitted; what gathered is dropped. */
  close(): void {
    this.closed = true;
    this.cancel();
    this.gathered = undefined;
    this.pending = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(new Error('closed before it was emitted'));
  }

  private schedule(ms: number): void {
    if (this.timer !== undefined || this.emitting !== undefined || this.closed || !this.pending) return;
    this.timer = ms <= 0 ? setImmediate(this.fire) : setTimeout(this.fire, ms);
    if (this.options.unref === true) this.timer.unref();
  }

  private cancel(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer as NodeJS.Timeout);
    clearImmediate(this.timer as NodeJS.Immediate);
    this.timer = undefined;
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    void this.run();
  };

  private run(): Promise<void> {
    if (!this.pending || this.closed) return Promise.resolve();
    const batch = this.gathered as A;
    const waiters = this.waiters;
    this.gathered = undefined;
    this.pending = false;
    this.waiters = [];
    let emitted: void | Promise<void>;
    try {
      emitted = this.options.emit(batch);
    } catch (err) {
      this.settled(batch, waiters, err ?? new Error('emit failed'));
      return Promise.resolve();
    }
    // A synchronous emit is done at once: the next item opens its window right away.
    if (!(emitted instanceof Promise)) {
      this.settled(batch, waiters, undefined);
      return Promise.resolve();
    }
    const emitting = emitted.then(
      () => this.settled(batch, waiters, undefined),
      (err: unknown) => this.settled(batch, waiters, err ?? new Error('emit failed')),
    );
    this.emitting = emitting;
    return emitting;
  }

  /** After an emit: its adds told, or the batch kept for a retry; then what gathered meanwhile gets its window. */
  private settled(batch: A, waiters: Waiter[], err: unknown): void {
    this.emitting = undefined;
    let delay = this.options.windowMs;
    const retry = this.options.retry;
    if (err === undefined) for (const w of waiters) w.resolve();
    else if (retry === undefined || this.closed) for (const w of waiters) w.reject(err);
    else {
      retry.onError?.(err);
      this.gathered = retry.merge(batch, this.pending ? this.gathered : undefined);
      this.pending = true;
      this.waiters = [...waiters, ...this.waiters];
      delay = retry.afterMs;
    }
    this.schedule(delay);
  }
}
