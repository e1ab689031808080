/**
 * Requests per client address per second, counted in this process (a fixed one-second window).
 * The evaluation server runs without Redis in file mode and answers in microseconds, so a shared
 * counter would cost more than the evaluations it protects; each replica limits on its own.
 */
export class FixedWindowRateLimiter {
  private counts = new Map<string, number>();
  private windowEnd = 0;

  constructor(
    /** Requests allowed per client per window; 0 turns the limiter off. */
    private readonly limit: number,
    private readonly windowMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.limit > 0;
  }

  /** 0 when the request may proceed, else the whole seconds to wait (for Retry-After). */
  take(client: string): number {
    if (this.limit <= 0) return 0;
    const now = this.now();
    if (now >= this.windowEnd) {
      this.counts = new Map();
      this.windowEnd = now - (now % this.windowMs) + this.windowMs;
    }
    const used = (this.counts.get(client) ?? 0) + 1;
    this.counts.set(client, used);
    return used <= this.limit ? 0 : Math.max(1, Math.ceil((this.windowEnd - now) / 1000));
  }
}
