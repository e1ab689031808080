import Stripe from 'stripe';
import { type Job, JobRunner } from './job-runner';

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('JobRunner', () => {
  it('runs again at once while a job has work, waits its interval when idle, and wakes early on demand', async () => {
    let runs = 0;
    const job: Job = { name: 'j', intervalMs: 10_000, run: async () => ++runs < 5 };
    const runner = new JobRunner([job], 1000);
    runner.start();
    await tick(50);
    expect(runs).toBe(5); // four with work back to back, then idle
    runner.wake('j');
    await tick(20);
    expect(runs).toBe(6);
    await runner.stop();
  });

  it('backs off after failures (1 s doubling, capped) and resets after a success', async () => {
    const starts: number[] = [];
    let fail = true;
    const job: Job = {
      name: 'flaky',
      intervalMs: 10_000,
      run: async () => {
        starts.push(Date.now());
        if (fail) throw new Stripe.errors.StripeConnectionError({ message: 'down' });
        return false;
      },
    };
    const runner = new JobRunner([job], 1500);
    runner.start();
    await tick(2800);
    // at 0, then after 1000 ms, then after min(2000, 1500) ms
    expect(starts.length).toBe(3);
    expect(starts[1] - starts[0]).toBeGreaterThanOrEqual(950);
    expect(starts[2] - starts[1]).toBeGreaterThanOrEqual(1450);
    expect(starts[2] - starts[1]).toBeLessThan(1900);
    fail = false;
    runner.wake('flaky');
    await tick(20);
    expect(starts.length).toBe(4);
    await runner.stop();
  });

  it('stop waits for the run in progress', async () => {
    let finished = false;
    const job: Job = {
      name: 'slow',
      intervalMs: 10_000,
      run: async () => {
        await tick(100);
        finished = true;
        return false;
      },
    };
    const runner = new JobRunner([job], 1000);
    runner.start();
    await tick(10);
    await runner.stop();
    expect(finished).toBe(true);
  });
});
