import { RedisKeys } from '@flagship/redis';
import type { RateLimitDecision, RateLimitService } from '@flagship/request-policies';
import { problemOf } from '../testing/problem-of';
import { CheckoutLimit } from './checkout-limit';

/** In-memory stand-in for the Redis limiter: counts per key, no clock (the window's arithmetic is proven against Redis in libs/request-policies). */
class CountingLimiter implements Pick<RateLimitService, 'consume'> {
  readonly counts = new Map<string, number>();
  readonly subjects: Array<{ key: string; limit: number; windowMs?: number }> = [];
  down = false;

  async consume(subject: { key: string; limit: number; windowMs?: number }): Promise<RateLimitDecision | undefined> {
    this.subjects.push(subject);
    if (this.down) return undefined;
    const used = this.counts.get(subject.key) ?? 0;
    const allowed = used < subject.limit;
    if (allowed) this.counts.set(subject.key, used + 1);
    return { allowed, limit: subject.limit, windowMs: subject.windowMs ?? 60_000, remaining: Math.max(0, subject.limit - used - 1), resetMs: 1000, retryAfterMs: allowed ? 0 : 1_234_400 };
  }
}

const A = '00000000-0000-4000-8000-0000000000a1';
const B = '00000000-0000-4000-8000-0000000000b2';

describe('CheckoutLimit', () => {
  let limiter: CountingLimiter;
  let limit: CheckoutLimit;

  beforeEach(() => {
    limiter = new CountingLimiter();
    limit = new CheckoutLimit(limiter, new RedisKeys('t:'), { CHECKOUT_SESSIONS_PER_HOUR: 3 });
  });

  it("admits CHECKOUT_SESSIONS_PER_HOUR sessions per tenant over an hour's window, then 429 rate-limited with Retry-After", async () => {
    for (let i = 0; i < 3; i++) await limit.admit(A);
    const refused = await problemOf(limit.admit(A));
    expect(refused.problem).toMatchObject({ status: 429, slug: 'rate-limited' });
    expect(refused.headers).toEqual({ 'Retry-After': '1235' });
    expect(refused.extensions).toEqual({ limit: 3, window: 'hour' });
    expect(refused.detail).toMatch(/3 checkout sessions in the last hour/);
    // Each tenant has a budget of its own, under a key scoped to it.
    await limit.admit(B);
    expect(new Set(limiter.subjects.map((s) => s.key))).toEqual(new Set([new RedisKeys('t:').tenant(A, 'rl', 'checkout-sessions'), new RedisKeys('t:').tenant(B, 'rl', 'checkout-sessions')]));
    expect(new Set(limiter.subjects.map((s) => [s.limit, s.windowMs].join()))).toEqual(new Set(['3,3600000']));
  });

  it('admits when the limiter cannot answer (Redis down): checkout must not stop with it', async () => {
    limiter.down = true;
    for (let i = 0; i < 5; i++) await limit.admit(A);
  });
});
