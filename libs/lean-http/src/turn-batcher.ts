/**
 * Collects the work items of one event-loop turn and hands them to `run` together, once the loop
 * has read every socket that was ready (setImmediate), as LeanRouter batches its answers: concurrent
 * requests then share one round trip to a database instead of taking one each. `run` answers one
 * result per item, in order; when it throws, every item of the batch is rejected with that error.
 *
 * With `maxInFlight`, at most that many runs are under way at once; items added meanwhile wait and
 * go together in the next run as soon as one finishes (group commit). When the database is idle an
 * item waits no longer than the turn; when it is busy, batches grow with the load instead of every
 * turn adding one more statement queued behind the others (on the same row locks and WAL flushes).
 */
export class TurnBatcher<T, R> {
  private items: T[] = [];
  private waiters: Array<{ resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private scheduled = false;
  private inFlight = 0;

  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    /** A batch larger than this is cut into several (one statement's parameters stay bounded). */
    private readonly maxBatch = 1000,
    /** At most this many runs at once (default: no limit). */
    private readonly maxInFlight = Number.POSITIVE_INFINITY,
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.items.push(item);
      this.waiters.push({ resolve, reject });
      if (this.items.length >= this.maxBatch) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flush);
      }
    });
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    while (this.items.length > 0 && this.inFlight < this.maxInFlight) {
      const items = this.items.splice(0, this.maxBatch);
      const waiters = this.waiters.splice(0, items.length);
      this.inFlight++;
      this.run(items)
        .then(
          (results) => {
            for (let i = 0; i < waiters.length; i++) {
              if (i < results.length) waiters[i]!.resolve(results[i]!);
              else waiters[i]!.reject(new Error(`batch answered ${results.length} results for ${waiters.length} items`));
            }
          },
          (err: unknown) => {
            for (const w of waiters) w.reject(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          // Whatever gathered while this run was under way goes now, together.
          if (this.items.length > 0 && !this.scheduled) this.flush();
        });
    }
  };
}
