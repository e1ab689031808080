import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { isStripeUnavailable } from '@flagship/billing';
import { HttpMetrics } from '@flagship/service-kit';
import { type Job, JOB_MAX_BACKOFF_MS, JOBS } from './job';

/**
 * billing-worker's one scheduler. Each job runs in its own loop: at once when the app has started
 * (what a crashed process left behind is settled first), again at once while a pass says it has more
 * work, `intervalMs` after a pass that left nothing, and after a failure with backoff (1 s doubling,
 * capped by `maxBackoffMs`: a job polling every 50 ms must not hammer a Stripe that is down). A run
 * of failures is logged once (a dependency down fails every pass until it is back), and the recovery
 * once. `wake` cuts an idle wait short (a webhook arrived). On shutdown it aborts the passes in
 * flight and waits for them, so no query outlives the pool.
 */
@Injectable()
export class JobScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('JobScheduler');
  private readonly abort = new AbortController();
  private readonly loops: Array<Promise<void>> = [];
  private readonly wakers = new Map<string, () => void>();
  private readonly runs: Counter<'job' | 'outcome'>;
  private readonly duration: Histogram<'job'>;

  constructor(
    @Inject(JOBS) private readonly jobs: Job[],
    metrics: HttpMetrics,
    @Inject(JOB_MAX_BACKOFF_MS) private readonly maxBackoffMs: number,
  ) {
    this.runs = new Counter({ name: 'billing_worker_job_runs_total', help: 'Passes of each job, by outcome', labelNames: ['job', 'outcome'], registers: [metrics.registry] });
    this.duration = new Histogram({
      name: 'billing_worker_job_duration_seconds',
      help: 'Time one pass of a job took',
      labelNames: ['job'],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60],
      registers: [metrics.registry],
    });
  }

  onApplicationBootstrap(): void {
    for (const job of this.jobs) {
      this.logger.log(`job ${job.name} every ${job.intervalMs / 1000} s`);
      this.loops.push(this.loop(job));
    }
  }

  /** Runs `name`'s next pass now if it is waiting (a no-op for a job that is running or unknown). */
  wake(name: string): void {
    this.wakers.get(name)?.();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.abort.abort();
    for (const wake of this.wakers.values()) wake();
    await Promise.all(this.loops);
  }

  private async loop(job: Job): Promise<void> {
    const signal = this.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      let wait = job.intervalMs;
      const end = this.duration.startTimer({ job: job.name });
      try {
        const more = await job.run(signal);
        this.runs.inc({ job: job.name, outcome: 'ok' });
        if (failures > 0) this.logger.log(`job ${job.name} recovered`);
        failures = 0;
        if (more === true) wait = 0;
      } catch (err) {
        this.runs.inc({ job: job.name, outcome: 'error' });
        failures++;
        wait = Math.min(this.maxBackoffMs, 1000 * 2 ** Math.min(failures - 1, 16));
        const reason = err instanceof Error ? err.message : String(err);
        if (failures > 1) this.logger.debug(`job ${job.name} failed again: ${reason}`);
        else if (isStripeUnavailable(err)) this.logger.warn(`job ${job.name}: Stripe unavailable, retrying with backoff until it answers: ${reason}`);
        else this.logger.error(`job ${job.name} failed, retrying with backoff until it succeeds: ${reason}`);
      } finally {
        end();
      }
      if (wait > 0) await this.sleep(job.name, wait);
      else await new Promise((r) => setImmediate(r));
    }
  }

  private sleep(name: string, ms: number): Promise<void> {
    if (this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(name);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.set(name, done);
    });
  }
}
