import type { HttpMetrics } from '@flagship/service-kit';

/** What Exchange needs of a metrics sink. */
export type RequestObserver = Pick<HttpMetrics, 'observe'>;

/**
 * The app's HttpMetrics, fed in batches. Recording one request in prom-client (label hashing, two
 * metric updates) costs several times more inside the serving loop than when the same calls run back
 * to back (between requests the code and its maps fall out of the CPU caches; figures in
 * docs/decisions/2026-11-29-serving-loop-costs.md). So the evaluation paths only write into preallocated arrays here
 * (typed arrays for the numbers: no number is boxed, nothing grows), recorded `flushMs` after the
 * first unrecorded request, when the arrays are full, and always before /metrics is answered, so a
 * scrape never misses a request. Keep `flushMs` short: a flush holds the event loop in proportion to
 * the requests it records, and every request waiting meanwhile waits that much longer (a long flush
 * interval showed in p99).
 */
export class BufferedMetrics implements RequestObserver {
  private readonly methods: string[];
  private readonly routes: string[];
  private readonly statuses: Uint16Array;
  private readonly seconds: Float64Array;
  private size = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly metrics: Pick<HttpMetrics, 'observe'>,
    private readonly flushMs = 10,
    private readonly capacity = 4096,
  ) {
    this.methods = new Array<string>(capacity).fill('');
    this.routes = new Array<string>(capacity).fill('');
    this.statuses = new Uint16Array(capacity);
    this.seconds = new Float64Array(capacity);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    const i = this.size++;
    this.methods[i] = method;
    this.routes[i] = route;
    this.statuses[i] = status;
    this.seconds[i] = seconds;
    if (this.size === this.capacity) this.flush();
    else if (this.timer === undefined) this.timer = setTimeout(this.flush, this.flushMs).unref();
  }

  readonly flush = (): void => {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const n = this.size;
    this.size = 0;
    for (let i = 0; i < n; i++) this.metrics.observe(this.methods[i]!, this.routes[i]!, this.statuses[i]!, this.seconds[i]!);
  };

  close(): void {
    this.flush();
  }
}
