/**
 * Collects the work items of one event-loop turn and hands them to `run` together, once the loop
 * has read every socket that was ready (setImmediate), as LeanRouter batches its answers: concurrent
 * requests then share one round trip to a database instead of taking one each. `run` answers one
 * result per item, in order; when it throws, every item of the batch is rejected with that error.
 */
export class TurnBatcher<T, R> {
  private items: T[] = [];
  private waiters: Array<{ resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private scheduled = false;

  constructor(
    private readonly run: (items: T[]) => Promise<R[]>,
    /** A batch larger than this is cut into several (one statement's parameters stay bounded). */
    private readonly maxBatch = 1000,
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
    if (this.items.length === 0) return;
    const items = this.items;
    const waiters = this.waiters;
    this.items = [];
    this.waiters = [];
    this.run(items).then(
      (results) => {
        for (let i = 0; i < waiters.length; i++) {
          if (i < results.length) waiters[i]!.resolve(results[i]!);
          else waiters[i]!.reject(new Error(`batch answered ${results.length} results for ${waiters.length} items`));
        }
      },
      (err: unknown) => {
        for (const w of waiters) w.reject(err);
      },
    );
  };
}
