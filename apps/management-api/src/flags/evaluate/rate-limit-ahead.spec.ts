import type { RateLimitDecision, RateLimitSubject } from '@flagship/request-policies';
import { RateLimitAhead } from './rate-limit-ahead';

/**
 * A shared budget as Redis keeps it (a fixed count here), answering only when the test says so, in
 * the order the requests were sent, as a pipeline does. `spend` stands for another replica.
 */
class Budget {
  used = 0;
  redisAway = false;
  private readonly queue: Array<() => void> = [];

  constructor(readonly limit: number) {}

  readonly count = (subject: RateLimitSubject): Promise<RateLimitDecision | undefined> =>
    new Promise((resolve) => {
      this.queue.push(() => {
        if (this.redisAway) return resolve(undefined);
        const allowed = this.used < this.limit;
        if (allowed) this.used++;
        resolve({ allowed, limit: subject.limit, windowMs: 60_000, remaining: Math.max(0, this.limit - this.used), resetMs: 30_000, retryAfterMs: allowed ? 0 : 1000 });
      });
    });

  /** Redis answers everything sent so far. */
  async answer(): Promise<void> {
    for (const done of this.queue.splice(0)) done();
    await new Promise((r) => setImmediate(r));
  }

  get pending(): number {
    return this.queue.length;
  }
}

const subject: RateLimitSubject = { key: 'rl:t1', limit: 5 } as RateLimitSubject;
const isPromise = (v: unknown): v is Promise<unknown> => v instanceof Promise;

describe('RateLimitAhead: the shared budget spent without waiting for Redis while it clearly has room', () => {
  it('the first request waits for Redis; the next answer at once, each still counted in Redis, with the remaining count Redis will reach', async () => {
    const budget = new Budget(5);
    const ahead = new RateLimitAhead(budget.count);
    const first = ahead.decide(subject);
    expect(isPromise(first)).toBe(true);
    await budget.answer();
    expect(await first).toMatchObject({ allowed: true, remaining: 4 });

    const next = [ahead.decide(subject), ahead.decide(subject)];
    expect(next.map((d) => (isPromise(d) ? 'waits' : d.remaining))).toEqual([3, 2]);
    expect(budget.pending).toBe(2);
    await budget.answer();
    expect(budget.used).toBe(3);
  });

  it('once the room left (after the requests in flight) is spent, Redis decides, and its refusal is the answer', async () => {
    const budget = new Budget(3);
    const ahead = new RateLimitAhead(budget.count);
    const first = ahead.decide(subject);
    await budget.answer();
    await first;
    const a = ahead.decide(subject);
    const b = ahead.decide(subject);
    expect([isPromise(a), isPromise(b)]).toEqual([false, false]);
    // 3 - 1 answered - 2 in flight: no room known, so this one waits for Redis.
    const c = ahead.decide(subject);
    expect(isPromise(c)).toBe(true);
    await budget.answer();
    expect(await c).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1000 });
    expect(budget.used).toBe(3);
  });

  it('another replica spending the budget is seen with the next answer', async () => {
    const budget = new Budget(10);
    const ahead = new RateLimitAhead(budget.count);
    const first = ahead.decide(subject);
    await budget.answer();
    await first;
    budget.used = 10; // the other replica spent the rest
    const seen = ahead.decide(subject); // answered ahead: this replica could not know yet
    expect(isPromise(seen)).toBe(false);
    await budget.answer();
    const after = ahead.decide(subject);
    expect(isPromise(after)).toBe(true);
    await budget.answer();
    expect(await after).toMatchObject({ allowed: false });
  });

  it('waits again when the last answer is older than freshMs, or Redis was away', async () => {
    const budget = new Budget(100);
    const ahead = new RateLimitAhead(budget.count, 50);
    const first = ahead.decide(subject);
    await budget.answer();
    await first;
    await new Promise((r) => setTimeout(r, 80));
    const stale = ahead.decide(subject);
    expect(isPromise(stale)).toBe(true);
    budget.redisAway = true;
    await budget.answer();
    expect(await stale).toBeUndefined();
    const afterOutage = ahead.decide(subject);
    expect(isPromise(afterOutage)).toBe(true);
    await budget.answer();
    expect(await afterOutage).toBeUndefined();
  });

  it('a changed limit (a plan change) waits for Redis', async () => {
    const budget = new Budget(100);
    const ahead = new RateLimitAhead(budget.count);
    const first = ahead.decide(subject);
    await budget.answer();
    await first;
    expect(isPromise(ahead.decide({ ...subject, limit: 50 }))).toBe(true);
    await budget.answer();
  });
});
