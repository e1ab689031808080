import { Logger } from '@nestjs/common';
import { isStripeUnavailable } from '@flagship/billing';

/** One periodic job: `run` answers true when it did work and should run again at once. */
export interface Job {
  readonly name: string;
  readonly intervalMs: number;
  run(): Promise<boolean>;
}

/**
 * A minimal scheduler for billing-worker's jobs: each job runs in its own loop, again at once while
 * it has work, every `intervalMs` when idle, and with exponential backoff after a failure (Stripe
 * down: 1 s doubling up to `maxBackoffMs`). `wake` cuts an idle wait short (a webhook arrived).
 * Stopping waits for the runs in progress, so shutdown never cuts a batch in half by choice.
 */
export class JobRunner {
  private readonly log = new Logger('jobs');
  private stopped = true;
  private readonly loops: Promise<void>[] = [];
  private readonly wakers = new Map<string, () => void>();

  constructor(
    private readonly jobs: readonly Job[],
    private readonly maxBackoffMs: number,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    for (const job of this.jobs) this.loops.push(this.loop(job));
  }

  wake(name: string): void {
    this.wakers.get(name)?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.wakers.values()) w();
    await Promise.all(this.loops);
    this.loops.length = 0;
  }

  private async loop(job: Job): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let wait = job.intervalMs;
      try {
        const more = await job.run();
        failures = 0;
        if (more) wait = 0;
      } catch (err) {
        failures++;
        wait = Math.min(this.maxBackoffMs, 1000 * 2 ** Math.min(failures - 1, 16));
        const what = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        if (isStripeUnavailable(err)) this.log.warn(`${job.name}: Stripe unavailable (${what}); retrying in ${wait} ms`);
        else this.log.error(`${job.name} failed (${what}); retrying in ${wait} ms`);
      }
      if (wait > 0 && !this.stopped) await this.sleep(job.name, wait);
      else await new Promise((r) => setImmediate(r));
    }
  }

  private sleep(name: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakers.set(name, done);
    });
  }
}
