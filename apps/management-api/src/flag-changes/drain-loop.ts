import type { Logger } from '@nestjs/common';

/**
 * A replica's polling loop over work claimed in Postgres (scheduled changes, guarded rollouts): it
 * calls `next` until it reports nothing done, waits `pollMs`, backs off while a pass fails, and stops
 * when told. Exactly once is the claim's business (a row lock taken with the write), not the loop's,
 * so every replica runs one and none needs a leader.
 */
export class DrainLoop {
  private readonly abort = new AbortController();
  private loop?: Promise<void>;
  private wake?: () => void;

  constructor(
    private readonly what: string,
    private readonly pollMs: number,
    private readonly next: () => Promise<unknown>,
    private readonly logger: Pick<Logger, 'log' | 'error'>,
  ) {}

  /** Starts the loop; a pollMs of 0 leaves it off (tests drive `next` by hand). */
  start(): void {
    if (this.pollMs > 0) this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.abort.signal.aborted) {
      let wait = this.pollMs;
      try {
        while (!this.abort.signal.aborted && (await this.next())) wait = 0;
        wait = this.pollMs;
        if (failures > 0) this.logger.log(`${this.what} run again`);
        failures = 0;
      } catch (err) {
        failures++;
        wait = Math.min(60_000, this.pollMs * 2 ** Math.min(failures, 8));
        if (failures === 1) this.logger.error(`${this.what} failed, retrying with backoff: ${err instanceof Error ? err.message : String(err)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
}
