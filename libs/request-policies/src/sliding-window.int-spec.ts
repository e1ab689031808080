import { createRedis, RedisKeys } from '@flagship/redis';
import { createTestRedisPrefix, type TestRedisPrefix } from '@flagship/testing';
import type Redis from 'ioredis';
import { RateLimitService } from './rate-limit.service';
import { resolveRequestPoliciesOptions } from './request-policies.options';

/**
 * The window algorithm against real Redis, on a clock the test holds (the apps use Redis' TIME),
 * so window boundaries are exact.
 */
describe('sliding-window counter in Redis', () => {
  const WINDOW = 60_000;
  /** A window boundary: 28333334 whole minutes after the epoch. */
  const T0 = 28_333_334 * WINDOW;
  let prefix: TestRedisPrefix;
  let redis: Redis;
  let service: RateLimitService;
  let n = 0;
  const subject = (limit: number) => ({ key: `${prefix.prefix}rl:test:${++n}`, limit });

  beforeAll(async () => {
    prefix = createTestRedisPrefix();
    redis = createRedis({ url: prefix.url, name: 'sliding-window-test' });
    await new Promise((resolve) => redis.once('ready', resolve));
    service = new RateLimitService(redis, new RedisKeys(prefix.prefix), resolveRequestPoliciesOptions({ windowMs: WINDOW }));
  });

  afterAll(async () => {
    await prefix?.cleanup();
    redis?.disconnect();
  });

  it('decides a batch in one pipeline as one call each would, in order, across subjects', async () => {
    const a = subject(2);
    const b = subject(5);
    const decisions = await service.consumeMany([a, b, a, a, b]);
    expect(decisions.map((d) => [d?.allowed, d?.limit, d?.remaining])).toEqual([
      [true, 2, 1],
      [true, 5, 4],
      [true, 2, 0],
      [false, 2, 0],
      [true, 5, 3],
    ]);
    // The same budget as consume spends from.
    expect(await service.consume(b)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('allows the limit within a window, then refuses until the spent window has decayed enough', async () => {
    const s = subject(3);
    const at = async (offset: number) => (await service.consume(s, T0 + offset))!;
    expect(await at(0)).toMatchObject({ allowed: true, limit: 3, remaining: 2, resetMs: 60_000 });
    expect(await at(500)).toMatchObject({ allowed: true, remaining: 1, resetMs: 59_500 });
    expect(await at(1_000)).toMatchObject({ allowed: true, remaining: 0, resetMs: 59_000 });
    // Spent: the next window starts with all 3 of this one weighing in, decaying linearly; one
    // request fits once 3 * (1 - elapsed/60 s) <= 2, i.e. 20 s into the next window.
    expect(await at(1_000)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 79_000 });
    // A fixed window would let a second burst through here; the sliding one does not.
    expect(await at(WINDOW)).toMatchObject({ allowed: false, retryAfterMs: 20_000 });
    expect(await at(WINDOW + 19_999)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    // Refused requests were not counted, so the caller gets in exactly when told.
    expect(await at(WINDOW + 20_000)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("counts a subject with its own window (an hour) over that window, not the module's minute", async () => {
    const HOUR = 3_600_000;
    const s = { ...subject(2), windowMs: HOUR };
    const at = async (offset: number) => (await service.consume(s, T0 + offset))!;
    expect(await at(0)).toMatchObject({ allowed: true, remaining: 1, windowMs: HOUR });
    expect(await at(1)).toMatchObject({ allowed: true, remaining: 0 });
    // A minute later a minute's window would have passed; the hour's has not.
    expect(await at(WINDOW + 1)).toMatchObject({ allowed: false, windowMs: HOUR });
    expect((await at(WINDOW + 1)).retryAfterMs).toBeGreaterThan(HOUR - 2 * WINDOW);
    expect(await redis.pttl(s.key)).toBeGreaterThan(HOUR);
  });

  it('computes Retry-After within the window while the previous window still weighs', async () => {
    const s = subject(3);
    for (let i = 0; i < 3; i++) await service.consume(s, T0 + i);
    // Half-way through the next window the old 3 weigh 1.5: one more fits (2.5 used).
    expect(await service.consume(s, T0 + WINDOW + 30_000)).toMatchObject({ allowed: true, remaining: 0 });
    // The next needs the old window's share to fall to 1: 40 s in, 10 s from now.
    expect(await service.consume(s, T0 + WINDOW + 30_000)).toMatchObject({ allowed: false, retryAfterMs: 10_000 });
    expect((await service.consume(s, T0 + WINDOW + 39_999))!.allowed).toBe(false);
    expect((await service.consume(s, T0 + WINDOW + 40_000))!.allowed).toBe(true);
  });

  it('forgets a subject after two quiet windows, and lets its key expire', async () => {
    const s = subject(2);
    await service.consume(s, T0);
    await service.consume(s, T0);
    expect((await service.consume(s, T0 + 1))!.allowed).toBe(false);
    const ttl = await redis.pttl(s.key);
    expect(ttl).toBeGreaterThan(WINDOW);
    expect(ttl).toBeLessThanOrEqual(2 * WINDOW);
    expect(await service.consume(s, T0 + 2 * WINDOW + 1)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('uses Redis time when the caller passes none', async () => {
    const s = subject(10);
    const first = (await service.consume(s))!;
    const second = (await service.consume(s))!;
    expect([first.remaining, second.remaining]).toEqual([9, 8]);
    expect(first.resetMs).toBeGreaterThan(0);
    expect(first.resetMs).toBeLessThanOrEqual(WINDOW);
  });

  it('never lets concurrent requests overspend', async () => {
    const s = subject(20);
    const decisions = await Promise.all(Array.from({ length: 50 }, () => service.consume(s, T0 + 5)));
    expect(decisions.filter((d) => d!.allowed)).toHaveLength(20);
    expect(decisions.filter((d) => d!.allowed).map((d) => d!.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
