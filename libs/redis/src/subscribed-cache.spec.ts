import { FakePubSub } from './pubsub.fake';
import { SubscribedCache, type SubscribedCacheOptions } from './subscribed-cache';
import { CHANGED, Source } from './subscribed-cache.fixture';

/**
 * SubscribedCache's rules over FakePubSub and the fake clock: no Redis, no waiting. What only
 * Redis can break (subscriptions over a real connection, reconnects, starting with Redis down)
 * stays in subscribed-cache.int-spec.ts.
 */
describe('SubscribedCache', () => {
  const open: Array<{ close(): void }> = [];

  beforeEach(() => {
    jest.useFakeTimers({ now: Date.parse('2026-11-29T12:00:00Z'), doNotFake: ['nextTick', 'queueMicrotask'] });
  });
  afterEach(() => {
    for (const o of open.splice(0)) o.close();
    jest.useRealTimers();
  });

  function setup(options: Partial<SubscribedCacheOptions<string, string>> = {}) {
    const pubsub = new FakePubSub();
    const source = new Source();
    const cache = new SubscribedCache<string, string>(pubsub, { name: 'TestCache', load: source.load, ...options })
      .follow(CHANGED, (m, c) => c.invalidate(m.key, m.part === undefined ? undefined : [m.part]))
      .start();
    open.push(cache);
    return { cache, source, pubsub };
  }
  /** Lets promise chains and due timers run. */
  const settle = (ms = 0) => jest.advanceTimersByTimeAsync(ms);

  it('loads once for concurrent readers; announced parts are read together by the next read, then a whole announcement', async () => {
    const { cache, source, pubsub } = setup();
    const [a, b] = await Promise.all([cache.get('k'), cache.get('k')]);
    expect([a, b]).toEqual(['k@1', 'k@1']);
    expect(source.requests).toEqual([{ key: 'k', reason: 'first', changed: [] }]);
    source.version = 2;
    await pubsub.publish(CHANGED, { key: 'k', part: 'p1' });
    await pubsub.publish(CHANGED, { key: 'k', part: 'p2' });
    expect(cache.peek('k')).toBeUndefined();
    expect(await cache.get('k')).toBe('k@2');
    expect(source.requests.at(-1)).toEqual({ key: 'k', reason: 'changed', changed: ['p1', 'p2'] });
    await pubsub.publish(CHANGED, { key: 'k' });
    expect(cache.peek('k')).toBeUndefined();
    expect(await cache.get('k')).toBe('k@2');
    expect(source.requests.at(-1)).toEqual({ key: 'k', reason: 'whole', changed: [] });
    // An announcement about a key not held loads nothing.
    await pubsub.publish(CHANGED, { key: 'other' });
    expect(source.requests).toHaveLength(3);
  });

  it('serves the last good value while loads fail, says so in status, backs off, and recovers', async () => {
    const { cache, source } = setup();
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new Error('Postgres is down');
    source.version = 2;
    cache.invalidate('k');
    expect(await cache.get('k')).toBe('k@1');
    expect(cache.status().lastError?.message).toBe('Postgres is down');
    const loads = source.requests.length;
    for (let i = 0; i < 20; i++) expect(await cache.get('k')).toBe('k@1');
    expect(source.requests.length).toBe(loads);
    source.failing = undefined;
    await settle(100);
    expect(await cache.get('k')).toBe('k@2');
    expect(cache.status().lastError).toBeUndefined();
  });

  it('does not serve the last good value after a failure serveStaleOn refuses (a refusal, not an outage)', async () => {
    const { cache, source } = setup({ serveStaleOn: (err) => !(err instanceof RangeError) });
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new RangeError('revoked');
    cache.invalidate('k');
    await expect(cache.get('k')).rejects.toThrow('revoked');
    expect(cache.peek('k', { stale: true })).toBeUndefined();
  });

  it('serveStaleOn is told what is wanted: an unconfirmed value is served through an outage, one announced as changed is not', async () => {
    const { cache, source, pubsub } = setup({ serveStaleOn: (_err, wanted) => wanted === 'reconcile' });
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new Error('Postgres is down');
    source.version = 2;
    cache.reconcileAll();
    expect(await cache.get('k')).toBe('k@1');
    await settle();
    expect(cache.status().lastError).toBeDefined();
    expect(await cache.get('k')).toBe('k@1');
    cache.invalidate('k');
    await expect(cache.get('k')).rejects.toThrow('Postgres is down');
    expect(cache.peek('k', { stale: true })).toBeUndefined();
    source.failing = undefined;
    expect(await cache.get('k')).toBe('k@2');

    source.failing = new Error('Postgres is down');
    await pubsub.publish(CHANGED, { key: 'k' });
    await expect(cache.get('k')).rejects.toThrow('Postgres is down');
    expect(source.reasons().filter((r) => r === 'whole')).toHaveLength(2);
  });

  it('a value past its expiry is not served: the read waits for a load; through an outage it is wanted whole', async () => {
    let deadline = Date.now() + 60_000;
    const { cache, source } = setup({ expiresAt: () => deadline, serveStaleOn: (_err, wanted) => wanted === 'reconcile' });
    expect(await cache.get('k')).toBe('k@1');
    source.version = 2;
    expect(await cache.get('k')).toBe('k@1');
    deadline = Date.now() + 100;
    cache.invalidate('k'); // the new deadline applies from the next load
    expect(await cache.get('k')).toBe('k@2');
    await settle(100);
    source.version = 3;
    expect(cache.peek('k')).toBeUndefined();
    expect(await cache.get('k')).toBe('k@3');
    // Expired with the source down: not stretched by the outage.
    deadline = Date.now() + 100;
    cache.invalidate('k');
    await cache.get('k');
    source.failing = new Error('Postgres is down');
    await settle(150);
    await expect(cache.get('k')).rejects.toThrow('Postgres is down');
    expect(cache.peek('k', { stale: true })).toBeUndefined();
  });

  it('an announcement during a load makes the read load again (the load may have read before the change)', async () => {
    const { cache, source } = setup();
    expect(await cache.get('k')).toBe('k@1');
    let opened!: () => void;
    source.gate = new Promise((resolve) => (opened = resolve));
    cache.invalidate('k', ['p1']);
    const reading = cache.get('k');
    await settle();
    expect(source.requests).toHaveLength(2);
    source.version = 2;
    cache.invalidate('k', ['p2']);
    source.gate = undefined;
    opened();
    expect(await reading).toBe('k@2');
    expect(source.requests.slice(1).map((r) => r.changed)).toEqual([['p1'], ['p2']]);
  });

  it('eager: an announced change is reloaded without a read; a failing reload is retried with a capped backoff until it succeeds', async () => {
    const { cache, source, pubsub } = setup({ eager: true, maxRetryMs: 400 });
    expect(await cache.get('k')).toBe('k@1');
    source.version = 2;
    await pubsub.publish(CHANGED, { key: 'k', part: 'p' });
    await settle();
    expect(cache.peek('k')).toBe('k@2');
    source.failing = new Error('down');
    source.version = 3;
    await pubsub.publish(CHANGED, { key: 'k' });
    await settle(100 + 200 + 400 + 400);
    // The first try, then retries after 100, 200, 400 and 400 ms (capped).
    expect(source.requests.length).toBe(3 + 4);
    expect(cache.peek('k', { stale: true })).toBe('k@2');
    source.failing = undefined;
    await settle(400);
    expect(cache.peek('k')).toBe('k@3');
  });

  it("eager: a failing reload is retried even when a reader's load (a stale peek, as /readyz makes) took the pending change first", async () => {
    const { cache, source, pubsub } = setup({ eager: true });
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new Error('down');
    source.version = 2;
    await pubsub.publish(CHANGED, { key: 'k', part: 'p' });
    await settle();
    expect(source.requests).toHaveLength(2);
    // Past the backoff, a stale peek starts a load of its own (held at the gate) before the retry timer runs.
    jest.setSystemTime(Date.now() + 150);
    let opened!: () => void;
    source.gate = new Promise<void>((r) => (opened = r));
    expect(cache.peek('k', { stale: true })).toBe('k@1');
    expect(source.requests).toHaveLength(3);
    // The retry timer finds that load under way and waits for it; it fails; the source is back.
    await settle(100);
    source.gate = undefined;
    opened();
    await settle();
    source.failing = undefined;
    await settle(2000);
    expect(cache.peek('k')).toBe('k@2');
  });

  it('eager: while an announced change is being reloaded, the old value is not served as current; onLoaded runs once it is', async () => {
    const loaded: Array<[string, string, string]> = [];
    const { cache, source } = setup({ eager: true, onLoaded: (key, value, reason) => loaded.push([key, value, reason]) });
    expect(await cache.get('k')).toBe('k@1');
    let opened!: () => void;
    source.gate = new Promise((resolve) => (opened = resolve));
    source.version = 2;
    cache.invalidate('k', ['p']);
    await settle();
    expect(source.requests).toHaveLength(2);
    expect(cache.peek('k')).toBeUndefined();
    expect(cache.peek('k', { stale: true })).toBe('k@1');
    const reading = cache.get('k');
    source.gate = undefined;
    opened();
    expect(await reading).toBe('k@2');
    expect(loaded).toEqual([
      ['k', 'k@1', 'first'],
      ['k', 'k@2', 'changed'],
    ]);
  });

  it('a reconcile asked for while parts are announced is not dropped by the partial load', async () => {
    const { cache, source } = setup();
    expect(await cache.get('k')).toBe('k@1');
    cache.invalidate('k', ['p']);
    cache.reconcileAll();
    expect(await cache.get('k')).toBe('k@1');
    expect(cache.peek('k')).toBe('k@1');
    await settle();
    expect(source.reasons().slice(1)).toEqual(['changed', 'reconcile']);
  });

  it('invalidateWhere with parts announces those parts of every matching key', async () => {
    const { cache, source } = setup();
    await cache.get('t1/a');
    await cache.get('t1/b');
    await cache.get('t2/a');
    cache.invalidateWhere((key) => key.startsWith('t1/'), ['flag']);
    expect([cache.peek('t1/a'), cache.peek('t1/b'), cache.peek('t2/a')]).toEqual([undefined, undefined, 't2/a@1']);
    await cache.get('t1/a');
    expect(source.requests.at(-1)).toEqual({ key: 't1/a', reason: 'changed', changed: ['flag'] });
  });

  it('eager with reconcileMs: held values are reconciled on a timer, without reads, spread over the period', async () => {
    const { cache, source } = setup({ eager: true, reconcileMs: 400 });
    await Promise.all(Array.from({ length: 60 }, (_, i) => cache.get(`k${i}`)));
    await settle(400 * 1.1 + 40);
    const at = source.times.filter((_, i) => source.requests[i]!.reason === 'reconcile');
    expect(at).toHaveLength(60);
    // Ticks every 40 ms, due times within ±10 %: more than one tick shares them.
    expect(Math.max(...at) - Math.min(...at)).toBeGreaterThanOrEqual(40);
  });

  it('a lazy cache reconciles a value older than reconcileMs on its next read, serving it meanwhile', async () => {
    const { cache, source } = setup({ reconcileMs: 1000 });
    expect(await cache.get('k')).toBe('k@1');
    source.version = 2;
    await settle(999);
    expect(await cache.get('k')).toBe('k@1');
    expect(source.requests).toHaveLength(1);
    await settle(2);
    expect(await cache.get('k')).toBe('k@1');
    await settle();
    expect(source.reasons()).toEqual(['first', 'reconcile']);
    expect(cache.peek('k')).toBe('k@2');
  });

  it('reconciles every held value when the subscriber reconnects, and once subscribed (announcements may have been missed)', async () => {
    const { cache, source, pubsub } = setup({ eager: true });
    await cache.get('a');
    await cache.get('b');
    pubsub.disconnect();
    source.version = 2;
    // Lost: the subscriber was away.
    await pubsub.publish(CHANGED, { key: 'a' });
    expect(cache.peek('a')).toBe('a@1');
    pubsub.reconnect();
    await settle();
    expect(source.reasons().slice(2)).toEqual(['reconcile', 'reconcile']);
    expect([cache.peek('a'), cache.peek('b')]).toEqual(['a@2', 'b@2']);
  });

  it('starts without waiting for its subscriptions: serves what it loads, and says it is not subscribed yet', async () => {
    const pubsub = new FakePubSub();
    pubsub.disconnect();
    const source = new Source();
    const cache = new SubscribedCache<string, string>(pubsub, { name: 'Down', load: source.load }).follow(CHANGED, () => undefined).start();
    open.push(cache);
    expect(await cache.get('k')).toBe('k@1');
    expect(cache.status()).toMatchObject({ subscribed: false, subscriber: 'reconnecting' });
    pubsub.reconnect();
    await settle();
    expect(cache.status()).toMatchObject({ subscribed: true, subscriber: 'ready' });
  });

  it('holds at most maxEntries keys and maxWeight, dropping the least recently read', async () => {
    const { cache } = setup({ maxEntries: 2 });
    await cache.get('a');
    await cache.get('b');
    await cache.get('a');
    await cache.get('c');
    expect([...cache.held()].map(([k]) => k).sort()).toEqual(['a', 'c']);

    const weighed = setup({ weigh: (v) => v.length, maxWeight: 8 }).cache;
    await weighed.get('a'); // 'a@1': 3
    await weighed.get('bb'); // 4
    await weighed.get('ccc'); // 5: 'a' goes, then 'bb'
    expect([...weighed.held()].map(([k]) => k)).toEqual(['ccc']);
    expect(weighed.status().weight).toBe(5);
  });

  it('hold: a held key is never dropped to make room, until released', async () => {
    const { cache, source, pubsub } = setup({ maxEntries: 2, eager: true });
    await cache.get('streamed');
    const release = cache.hold('streamed');
    for (const k of ['b', 'c', 'd']) await cache.get(k);
    expect([...cache.held()].map(([k]) => k).sort()).toEqual(['d', 'streamed']);
    // Still followed: its changes are heard and reloaded without a read.
    source.version = 2;
    await pubsub.publish(CHANGED, { key: 'streamed', part: 'p' });
    await settle();
    expect(cache.peek('streamed')).toBe('streamed@2');
    release();
    release(); // a second call does nothing
    await cache.get('e');
    expect([...cache.held()].map(([k]) => k).sort()).toEqual(['d', 'e']);

    const weighed = setup({ weigh: (v) => v.length, maxWeight: 10 }).cache;
    await weighed.get('kept'); // 'kept@1': 6
    const off = weighed.hold('kept');
    await weighed.get('other'); // 7: past the bound, but 'kept' is held
    expect([...weighed.held()].map(([k]) => k).sort()).toEqual(['kept', 'other']);
    off();
    await weighed.get('x'); // 3: 'kept' may go now
    expect([...weighed.held()].map(([k]) => k).sort()).toEqual(['other', 'x']);
  });
});
