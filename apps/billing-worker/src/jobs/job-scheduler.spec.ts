import { Logger } from '@nestjs/common';
import { HttpMetrics } from '@flagship/service-kit';
import type { Job } from './job';
import { JobScheduler } from './job-scheduler';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls rather than sleeping a fixed time: on a busy machine timers fire late. */
async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(2);
  }
}

/** A job of the test's own: records its passes, takes `passMs`, fails while `failures` lasts. */
class RecordingJob implements Job {
  readonly name = 'recording';
  passes = 0;
  starts: number[] = [];
  running = 0;
  mostAtOnce = 0;
  abortedSeen = false;
  constructor(
    readonly intervalMs: number,
    private readonly passMs: number,
    public failures = 0,
  ) {}

  async run(signal: AbortSignal): Promise<void> {
    this.passes++;
    this.starts.push(performance.now());
    this.running++;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    try {
      await sleep(this.passMs);
      this.abortedSeen ||= signal.aborted;
      if (this.failures > 0) {
        this.failures--;
        throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      }
    } finally {
      this.running--;
    }
  }
}

describe('JobScheduler', () => {
  const schedulers: JobScheduler[] = [];
  const start = (...jobs: Job[]) => startWithBackoff(60_000, ...jobs);
  const startWithBackoff = (maxBackoffMs: number, ...jobs: Job[]) => {
    const s = new JobScheduler(jobs, new HttpMetrics('billing-worker-test', false), maxBackoffMs);
    schedulers.push(s);
    s.onApplicationBootstrap();
    return s;
  };
  beforeEach(() => {
    for (const level of ['log', 'error', 'debug'] as const) jest.spyOn(Logger.prototype, level).mockImplementation(() => undefined);
  });
  afterEach(async () => {
    jest.useRealTimers();
    for (const s of schedulers.splice(0)) await s.beforeApplicationShutdown();
    jest.restoreAllMocks();
  });

  it('runs a job at once, then an interval after each pass ends: never two passes at once', async () => {
    const job = new RecordingJob(5, 20);
    start(job);
    await until(() => job.passes >= 4);
    expect(job.mostAtOnce).toBe(1);
    // A pass takes 20 ms and the next starts 5 ms after it ends (timers fire late under load, and up to a millisecond early).
    for (let i = 1; i < job.starts.length; i++) expect(job.starts[i] - job.starts[i - 1]).toBeGreaterThanOrEqual(22);
  });

  it('logs a run of failures once, goes on trying, and logs the recovery', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error');
    const logs = jest.spyOn(Logger.prototype, 'log');
    const job = new RecordingJob(5, 1, 4);
    startWithBackoff(5, job);
    await until(() => logs.mock.calls.some((c) => c[0] === 'job recording recovered'));
    expect(job.failures).toBe(0);
    expect(job.passes).toBeGreaterThanOrEqual(5);
    expect(errors.mock.calls.map((c) => c[0])).toEqual(['job recording failed, retrying with backoff until it succeeds: connect ECONNREFUSED 127.0.0.1:5432']);
    expect(logs.mock.calls.filter((c) => c[0] === 'job recording recovered')).toHaveLength(1);
  });

  it('on shutdown aborts the pass in flight, waits for it, and starts no other', async () => {
    const job = new RecordingJob(1, 50);
    const scheduler = start(job);
    await until(() => job.running === 1);
    await scheduler.beforeApplicationShutdown();
    expect([job.running, job.abortedSeen]).toEqual([0, true]);
    const passes = job.passes;
    await sleep(30);
    expect(job.passes).toBe(passes);
  });

  it('counts passes by outcome in the app\'s metrics', async () => {
    const metrics = new HttpMetrics('billing-worker-test', false);
    // A short backoff: this test is about the counts, the backoff's seconds are the next test's.
    const s = new JobScheduler([new RecordingJob(1, 1, 1)], metrics, 5);
    schedulers.push(s);
    s.onApplicationBootstrap();
    await until(async () => /outcome="ok"/.test(await metrics.registry.metrics()));
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/billing_worker_job_runs_total\{job="recording",outcome="error",service="billing-worker-test"\} 1\n/);
    expect(text).toMatch(/billing_worker_job_runs_total\{job="recording",outcome="ok",service="billing-worker-test"\} [1-9]/);
  });

  it('runs again at once while a pass says there is more work, waits its interval when idle, and wakes early on demand', async () => {
    let runs = 0;
    const job: Job = { name: 'batches', intervalMs: 60_000, run: async () => ++runs < 5 };
    const s = start(job);
    await until(() => runs === 5); // four passes with work back to back, then idle for a minute
    await sleep(30);
    expect(runs).toBe(5);
    s.wake('batches');
    await until(() => runs === 6);
  });

  it('backs off after failures (1 s doubling, capped by the longest backoff) and resets after a success', async () => {
    const starts: number[] = [];
    let failing = true;
    const job: Job = {
      name: 'flaky',
      intervalMs: 60_000,
      run: async () => {
        starts.push(Date.now());
        if (failing) throw new Error('connect ECONNREFUSED 127.0.0.1:12111');
      },
    };
    // A fake clock (also running at real speed, for `until`'s polling) walks through the backoff's
    // seconds without waiting them.
    jest.useFakeTimers({ advanceTimers: true });
    const s = new JobScheduler([job], new HttpMetrics('billing-worker-test', false), 1500);
    schedulers.push(s);
    s.onApplicationBootstrap();
    for (let i = 0; i < 40 && starts.length < 3; i++) await jest.advanceTimersByTimeAsync(100);
    expect(starts).toHaveLength(3);
    // at 0, then after 1000 ms, then after min(2000, 1500) ms
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(950);
    expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(1450);
    expect(starts[2]! - starts[1]!).toBeLessThan(1990);
    failing = false;
    s.wake('flaky');
    await until(() => starts.length === 4);
  });
});
