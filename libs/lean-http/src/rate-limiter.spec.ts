import { FixedWindowRateLimiter } from './rate-limiter';

describe('FixedWindowRateLimiter', () => {
  it('is off at 0', () => {
    const limiter = new FixedWindowRateLimiter(0);
    expect(limiter.enabled).toBe(false);
    for (let i = 0; i < 100; i++) expect(limiter.take('a')).toBe(0);
  });

  it('allows `limit` requests per client per window, then says how long to wait', () => {
    let now = 10_250;
    const limiter = new FixedWindowRateLimiter(2, 1000, () => now);
    expect([limiter.take('a'), limiter.take('a'), limiter.take('b')]).toEqual([0, 0, 0]);
    expect(limiter.take('a')).toBe(1);
    now = 10_999;
    expect(limiter.take('a')).toBe(1);
    now = 11_000; // a new window
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 1]);
  });

  it('rounds Retry-After up to whole seconds for longer windows', () => {
    let now = 0;
    const limiter = new FixedWindowRateLimiter(1, 60_000, () => now);
    limiter.take('a');
    now = 500;
    expect(limiter.take('a')).toBe(60);
    now = 59_001;
    expect(limiter.take('a')).toBe(1);
  });
});
