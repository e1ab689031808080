import { type CachedToken, TokenCache } from './token-cache';

/** A token source that counts its calls and can be held open, to watch concurrent callers. */
function tokenSource(clock: { now: number }, lifetimeMs = 3_600_000) {
  let issued = 0;
  let gate: Promise<void> = Promise.resolve();
  let open: () => void = () => undefined;
  return {
    get issued() {
      return issued;
    },
    hold() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      open();
    },
    fetch: async (): Promise<CachedToken> => {
      issued++;
      const n = issued;
      await gate;
      return { value: `token-${n}`, expiresAtMs: clock.now + lifetimeMs };
    },
  };
}

describe('TokenCache', () => {
  it('fetches once and serves the cached token while it is fresh', async () => {
    const clock = { now: 0 };
    const source = tokenSource(clock);
    const cache = new TokenCache(source.fetch, { now: () => clock.now });
    expect(await cache.get()).toBe('token-1');
    clock.now = 3_600_000 - 60_001;
    expect(await cache.get()).toBe('token-1');
    expect(source.issued).toBe(1);
  });

  it('refreshes 60 s before expiry', async () => {
    const clock = { now: 0 };
    const source = tokenSource(clock);
    const cache = new TokenCache(source.fetch, { now: () => clock.now });
    await cache.get();
    clock.now = 3_600_000 - 60_000;
    expect(await cache.get()).toBe('token-2');
  });

  it('refreshes a short-lived token at half its life rather than on every call', async () => {
    const clock = { now: 0 };
    const source = tokenSource(clock, 100_000);
    const cache = new TokenCache(source.fetch, { now: () => clock.now });
    await cache.get();
    clock.now = 49_000;
    expect(await cache.get()).toBe('token-1');
    clock.now = 50_000;
    expect(await cache.get()).toBe('token-2');
  });

  it('lets concurrent callers share one in-flight fetch', async () => {
    const clock = { now: 0 };
    const source = tokenSource(clock);
    const cache = new TokenCache(source.fetch, { now: () => clock.now });
    source.hold();
    const all = Promise.all(Array.from({ length: 10 }, () => cache.get()));
    source.release();
    expect(await all).toEqual(Array(10).fill('token-1'));
    expect(source.issued).toBe(1);
  });

  it('refreshes once when many callers report the same refused token', async () => {
    const clock = { now: 0 };
    const source = tokenSource(clock);
    const cache = new TokenCache(source.fetch, { now: () => clock.now });
    const used = await cache.get();
    cache.invalidate(used);
    const fresh = await cache.get();
    // Late reports of the old token must not throw away the new one.
    cache.invalidate(used);
    cache.invalidate(used);
    expect([fresh, await cache.get(), source.issued]).toEqual(['token-2', 'token-2', 2]);
  });

  it('does not cache a failed fetch: the next caller tries again', async () => {
    let calls = 0;
    const cache = new TokenCache(async () => {
      calls++;
      if (calls === 1) throw new Error('token endpoint down');
      return { value: 'token-ok', expiresAtMs: Date.now() + 3_600_000 };
    });
    await expect(cache.get()).rejects.toThrow('token endpoint down');
    expect(await cache.get()).toBe('token-ok');
  });
});
