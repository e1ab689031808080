import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { HttpMetrics } from '@flagship/service-kit';
import { type Job, JOBS } from './job';

interface Slot {
  job: Job;
  timer?: NodeJS.Timeout;
  running?: Promise<void>;
  /** True from a failed pass until the next good one: a long outage is logged once, not every tick. */
  failing: boolean;
}

/**
 * Runs every job when the app has started, then again `intervalMs` after each pass ends (so passes of
 * one job never overlap), and stops them before the pools close on shutdown.
 */
@Injectable()
export class JobScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('JobScheduler');
  private readonly slots: Slot[];
  private readonly abort = new AbortController();
  private readonly runs: Counter<'job' | 'outcome'>;
  private readonly duration: Histogram<'job'>;

  constructor(@Inject(JOBS) jobs: Job[], metrics: HttpMetrics) {
    this.slots = jobs.map((job) => ({ job, failing: false }));
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
    for (const slot of this.slots) {
      this.logger.log(`job ${slot.job.name} every ${slot.job.intervalMs / 1000} s`);
      // The first pass at once: after a crash, what the last process left behind is settled first.
      this.schedule(slot, 0);
    }
  }

  /** Stops scheduling, aborts passes in flight and waits for them, so no query outlives the pool. */
  async beforeApplicationShutdown(): Promise<void> {
    this.abort.abort();
    for (const slot of this.slots) clearTimeout(slot.timer);
    await Promise.all(this.slots.map((s) => s.running));
  }

  private schedule(slot: Slot, delayMs: number): void {
    if (this.abort.signal.aborted) return;
    slot.timer = setTimeout(() => {
      slot.running = this.pass(slot).finally(() => {
        slot.running = undefined;
        this.schedule(slot, slot.job.intervalMs);
      });
    }, delayMs);
  }

  private async pass(slot: Slot): Promise<void> {
    const { job } = slot;
    const end = this.duration.startTimer({ job: job.name });
    try {
      await job.run(this.abort.signal);
      this.runs.inc({ job: job.name, outcome: 'ok' });
      if (slot.failing) this.logger.log(`job ${job.name} recovered`);
      slot.failing = false;
    } catch (err) {
      this.runs.inc({ job: job.name, outcome: 'error' });
      const reason = err instanceof Error ? err.message : String(err);
      // A dependency down fails every tick until it is back: say so once, then only at debug level.
      if (slot.failing) this.logger.debug(`job ${job.name} failed again: ${reason}`);
      else this.logger.error(`job ${job.name} failed, retrying every ${job.intervalMs / 1000} s until it succeeds: ${reason}`);
      slot.failing = true;
    } finally {
      end();
    }
  }
}
