import { nextAttemptAt } from './webhook-retry';

const POLICY = { baseMs: 5_000, maxDelayMs: 3_600_000, windowMs: 86_400_000 };
const T0 = new Date('2026-11-29T00:00:00.000Z');

describe('nextAttemptAt', () => {
  it('doubles the wait after each failure from the base, capped at the longest wait', () => {
    const waits = [1, 2, 3, 4, 11, 12, 40].map((n) => nextAttemptAt(n, T0, T0, POLICY, 0)!.getTime() - T0.getTime());
    expect(waits).toEqual([5_000, 10_000, 20_000, 40_000, 3_600_000, 3_600_000, 3_600_000]);
  });

  it('adds at most a tenth of the wait as jitter', () => {
    expect(nextAttemptAt(2, T0, T0, POLICY, 0.999)!.getTime() - T0.getTime()).toBe(10_999);
  });

  it('gives up once the next attempt would fall more than the window after the event', () => {
    const late = new Date(T0.getTime() + POLICY.windowMs - 4_000);
    expect(nextAttemptAt(1, T0, late, POLICY, 0)).toBeUndefined();
    expect(nextAttemptAt(1, T0, new Date(T0.getTime() + POLICY.windowMs - 5_000), POLICY, 0)).toEqual(new Date(T0.getTime() + POLICY.windowMs));
  });

  it('tries about thirty times in a day with the defaults', () => {
    let now = T0;
    let attempts = 1;
    for (let at = nextAttemptAt(attempts, T0, now, POLICY, 0); at; at = nextAttemptAt(attempts, T0, now, POLICY, 0)) {
      now = at;
      attempts++;
    }
    expect(attempts).toBeGreaterThanOrEqual(25);
    expect(attempts).toBeLessThanOrEqual(40);
  });
});
