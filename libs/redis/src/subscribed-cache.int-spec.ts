import { DisposableRedis, waitFor } from '@flagship/testing';
import type { Channel } from './channels';
import { PubSub } from './pubsub';
import { createRedis } from './redis.factory';
import { RedisKeys } from './redis-keys';
import { type LoadRequest, SubscribedCache } from './subscribed-cache';

/** `{ key, part? }`: a test channel announcing a change to a key, or to one part of it. */
const CHANGED: Channel<{ key: string; part?: string }> = {
  name: 'changed',
  check: (m) => {
    const { key, part } = m as { key?: unknown; part?: unknown };
    if (typeof key !== 'string') return undefined;
    return typeof part === 'string' ? { key, part } : { key };
  },
};

/** A source of values whose reads are recorded and can be made to fail or wait. */
class Source {
  version = 1;
  failing: Error | undefined;
  gate: Promise<void> | undefined;
  readonly requests: Array<{ key: string; reason: string; changed: string[] }> = [];
  /** When each request was made (ms since the epoch), in the order of `requests`. */
  readonly times: number[] = [];

  load = async (key: string, r: LoadRequest<string>): Promise<string> => {
    this.requests.push({ key, reason: r.reason, changed: [...r.changed].sort() });
    this.times.push(Date.now());
    const version = this.version;
    await this.gate;
    if (this.failing) throw this.failing;
    return `${key}@${version}`;
  };
}

describe('SubscribedCache over a Redis of the test\'s own', () => {
  let redis: DisposableRedis;
  let n = 0;
  const open: Array<{ close(): void | Promise<void> }> = [];

  beforeAll(async () => {
    redis = await DisposableRedis.start();
  });
  afterEach(async () => {
    for (const o of open.splice(0)) await o.close();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  async function setup(options: Partial<ConstructorParameters<typeof SubscribedCache<string, string>>[1]> = {}) {
    const keys = new RedisKeys(`sc${++n}:`);
    const publisher = createRedis({ url: redis.url, name: 'pub' });
    const pubsub = new PubSub(publisher, keys, redis.url, 'test');
    open.push({ close: () => publisher.disconnect() }, pubsub);
    const source = new Source();
    const cache = new SubscribedCache<string, string>(pubsub, { name: 'TestCache', load: source.load, ...options })
      .follow(CHANGED, (m, c) => c.invalidate(m.key, m.part === undefined ? undefined : [m.part]))
      .start();
    open.push(cache);
    await waitFor(async () => cache.status().subscribed && publisher.status === 'ready');
    return { cache, source, pubsub, publisher };
  }

  it('loads once for concurrent readers, and an announced change is read by the next read, with the parts named', async () => {
    const { cache, source, pubsub } = await setup();
    const [a, b] = await Promise.all([cache.get('k'), cache.get('k')]);
    expect([a, b]).toEqual(['k@1', 'k@1']);
    expect(source.requests).toEqual([{ key: 'k', reason: 'first', changed: [] }]);
    expect(cache.peek('k')).toBe('k@1');

    source.version = 2;
    // Handlers of one channel run in the order they subscribed, the cache's first: once this one has
    // heard p2, so has the cache (without it, a read between the two messages would load p1 alone).
    const heard: string[] = [];
    const stop = await pubsub.subscribe(CHANGED, (m) => heard.push(m.part ?? ''));
    await pubsub.publish(CHANGED, { key: 'k', part: 'p1' });
    await pubsub.publish(CHANGED, { key: 'k', part: 'p2' });
    await waitFor(async () => heard.includes('p2'));
    await stop();
    expect(cache.peek('k')).toBeUndefined();
    // Both parts announced before the read: one load covers them.
    expect(await cache.get('k')).toBe('k@2');
    expect(source.requests.slice(1)).toEqual([{ key: 'k', reason: 'changed', changed: ['p1', 'p2'] }]);

    await pubsub.publish(CHANGED, { key: 'k' });
    await waitFor(async () => cache.peek('k') === undefined);
    expect(await cache.get('k')).toBe('k@2');
    expect(source.requests.at(-1)).toEqual({ key: 'k', reason: 'whole', changed: [] });
  });

  it('serves the last good value while loads fail, says so in status, and recovers', async () => {
    const { cache, source } = await setup();
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new Error('Postgres is down');
    source.version = 2;
    cache.invalidate('k');
    expect(await cache.get('k')).toBe('k@1');
    expect(cache.status().lastError?.message).toBe('Postgres is down');
    // Within the backoff, reads do not hammer the source.
    const loads = source.requests.length;
    for (let i = 0; i < 20; i++) expect(await cache.get('k')).toBe('k@1');
    // At most one more attempt, should the machine pause past the first 100 ms backoff.
    expect(source.requests.length - loads).toBeLessThanOrEqual(1);
    source.failing = undefined;
    await waitFor(async () => (await cache.get('k')) === 'k@2');
    expect(cache.status().lastError).toBeUndefined();
  });

  it('does not serve the last good value after a failure serveStaleOn refuses (a refusal, not an outage)', async () => {
    const { cache, source } = await setup({ serveStaleOn: (err) => !(err instanceof RangeError) });
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new RangeError('revoked');
    cache.invalidate('k');
    await expect(cache.get('k')).rejects.toThrow('revoked');
    expect(cache.peek('k', { stale: true })).toBeUndefined();
  });

  it('serveStaleOn is told what is wanted: an unconfirmed value is served through an outage, one announced as changed is not', async () => {
    const { cache, source, pubsub } = await setup({ serveStaleOn: (_err, wanted) => wanted === 'reconcile' });
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new Error('Postgres is down');
    source.version = 2;
    // Announcements may have been missed: the value is served while it is compared, and through the failure.
    cache.reconcileAll();
    expect(await cache.get('k')).toBe('k@1');
    await waitFor(async () => cache.status().lastError !== undefined);
    expect(await cache.get('k')).toBe('k@1');
    // Announced as changed within the failed reload's backoff: no longer served, the error goes to the reader.
    cache.invalidate('k');
    await expect(cache.get('k')).rejects.toThrow('Postgres is down');
    expect(cache.peek('k', { stale: true })).toBeUndefined();
    source.failing = undefined;
    expect(await cache.get('k')).toBe('k@2');

    // Announced over the feed, then a failed load: refused too.
    source.failing = new Error('Postgres is down');
    await pubsub.publish(CHANGED, { key: 'k' });
    await waitFor(async () => cache.peek('k') === undefined);
    await expect(cache.get('k')).rejects.toThrow('Postgres is down');
    expect(source.requests.filter((r) => r.reason === 'whole')).toHaveLength(2);
  });

  it('serveStaleOn: a value past its expiry is wanted whole, so an outage does not stretch its life', async () => {
    const { cache, source } = await setup({ expiresAt: (_v, loadedAt) => loadedAt + 100, serveStaleOn: (_err, wanted) => wanted === 'reconcile' });
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new Error('Postgres is down');
    await new Promise((resolve) => setTimeout(resolve, 150));
    await expect(cache.get('k')).rejects.toThrow('Postgres is down');
    expect(cache.peek('k', { stale: true })).toBeUndefined();
  });

  it('a value past its expiry is not served: the read waits for a load', async () => {
    let deadline = Date.now() + 60_000;
    const { cache, source } = await setup({ expiresAt: () => deadline });
    expect(await cache.get('k')).toBe('k@1');
    source.version = 2;
    expect(await cache.get('k')).toBe('k@1');
    deadline = Date.now() - 1;
    cache.invalidate('k'); // the new deadline applies from the next load
    expect(await cache.get('k')).toBe('k@2');
    source.version = 3;
    expect(cache.peek('k')).toBeUndefined();
    expect(await cache.get('k')).toBe('k@3');
  });

  it('an announcement during a load makes the read load again (the load may have read before the change)', async () => {
    const { cache, source } = await setup();
    expect(await cache.get('k')).toBe('k@1');
    let open!: () => void;
    source.gate = new Promise((resolve) => (open = resolve));
    cache.invalidate('k', ['p1']);
    const reading = cache.get('k');
    await waitFor(async () => source.requests.length === 2);
    source.version = 2;
    cache.invalidate('k', ['p2']);
    source.gate = undefined;
    open();
    expect(await reading).toBe('k@2');
    expect(source.requests.slice(1).map((r) => r.changed)).toEqual([['p1'], ['p2']]);
  });

  it('eager: an announced change is reloaded without a read, a failing reload is retried until it succeeds', async () => {
    const { cache, source, pubsub } = await setup({ eager: true, maxRetryMs: 50 });
    expect(await cache.get('k')).toBe('k@1');
    source.version = 2;
    await pubsub.publish(CHANGED, { key: 'k', part: 'p' });
    await waitFor(async () => cache.peek('k') === 'k@2');
    source.failing = new Error('down');
    source.version = 3;
    await pubsub.publish(CHANGED, { key: 'k' });
    await waitFor(async () => source.requests.length >= 5);
    expect(cache.peek('k', { stale: true })).toBe('k@2');
    source.failing = undefined;
    await waitFor(async () => cache.peek('k') === 'k@3');
  });

  it('eager: a failing reload is retried even when a reader\'s load (peek stale, as /readyz does) took the pending change while the retry fired', async () => {
    const { cache, source, pubsub } = await setup({ eager: true });
    expect(await cache.get('k')).toBe('k@1');
    source.failing = new Error('down');
    source.version = 2;
    await pubsub.publish(CHANGED, { key: 'k', part: 'p' });
    // The eager reload fails (request 2) and is to be retried after its backoff (100 ms)...
    await waitFor(async () => source.requests.length >= 2);
    await new Promise((r) => setImmediate(r));
    // ...but before that timer runs, a reader's stale peek starts a load of its own, held at the gate.
    const until = Date.now() + 150;
    while (Date.now() < until) {
      // The event loop held: the retry timer is due and waits; the peek below comes first.
    }
    let open!: () => void;
    source.gate = new Promise<void>((r) => (open = r));
    expect(cache.peek('k', { stale: true })).toBe('k@1');
    expect(source.requests).toHaveLength(3);
    // The retry timer fires while that load is under way; then the load fails, and Postgres is back.
    await new Promise((r) => setTimeout(r, 50));
    open();
    source.gate = undefined;
    await new Promise((r) => setTimeout(r, 20));
    source.failing = undefined;
    await waitFor(async () => cache.peek('k') === 'k@2', 3000);
  });

  it('eager: while an announced change is being reloaded, the old value is not served as current (a writer reads its own change)', async () => {
    const loaded: Array<[string, string, string]> = [];
    const { cache, source } = await setup({ eager: true, onLoaded: (key, value, reason) => loaded.push([key, value, reason]) });
    expect(await cache.get('k')).toBe('k@1');
    let open!: () => void;
    source.gate = new Promise((resolve) => (open = resolve));
    source.version = 2;
    cache.invalidate('k', ['p']);
    // The eager reload has started (and taken the announced part off the entry): still not current.
    await waitFor(async () => source.requests.length === 2);
    expect(cache.peek('k')).toBeUndefined();
    expect(cache.peek('k', { stale: true })).toBe('k@1');
    const reading = cache.get('k');
    source.gate = undefined;
    open();
    expect(await reading).toBe('k@2');
    // onLoaded ran once the value was served again.
    expect(loaded).toEqual([
      ['k', 'k@1', 'first'],
      ['k', 'k@2', 'changed'],
    ]);
  });

  it('a reconcile asked for while parts are announced is not dropped by the partial load', async () => {
    const { cache, source } = await setup();
    expect(await cache.get('k')).toBe('k@1');
    cache.invalidate('k', ['p']);
    cache.reconcileAll();
    expect(await cache.get('k')).toBe('k@1');
    // The read after the partial load starts the reconcile still owed.
    expect(cache.peek('k')).toBe('k@1');
    await waitFor(async () => source.requests.length === 3);
    expect(source.requests.slice(1).map((r) => r.reason)).toEqual(['changed', 'reconcile']);
  });

  it('invalidateWhere with parts announces those parts of every matching key, loaded or loading', async () => {
    const { cache, source } = await setup();
    await cache.get('t1/a');
    await cache.get('t1/b');
    await cache.get('t2/a');
    cache.invalidateWhere((key) => key.startsWith('t1/'), ['flag']);
    expect([cache.peek('t1/a'), cache.peek('t1/b'), cache.peek('t2/a')]).toEqual([undefined, undefined, 't2/a@1']);
    await cache.get('t1/a');
    expect(source.requests.at(-1)).toEqual({ key: 't1/a', reason: 'changed', changed: ['flag'] });
  });

  it('eager with reconcileMs: held values are reconciled on a timer, without reads', async () => {
    const { cache, source } = await setup({ eager: true, reconcileMs: 50 });
    expect(await cache.get('k')).toBe('k@1');
    await waitFor(async () => source.requests.some((r) => r.reason === 'reconcile'));
  });

  it('eager reconciles of many values are spread over the period, not made in one burst', async () => {
    const { cache, source } = await setup({ eager: true, reconcileMs: 400 });
    // Loaded together, so without the jitter every one would fall due at the same tick.
    await Promise.all(Array.from({ length: 60 }, (_, i) => cache.get(`k${i}`)));
    const reconciles = () => source.times.filter((_, i) => source.requests[i]!.reason === 'reconcile');
    await waitFor(async () => reconciles().length >= 60, 5000);
    const at = reconciles();
    // The ticks come every 40 ms and the due times spread over ±40 ms: at least two ticks share them.
    const first = at.slice(0, 60);
    expect(Math.max(...first) - Math.min(...first)).toBeGreaterThanOrEqual(30);
  });

  it('holds at most maxEntries keys, dropping the least recently read', async () => {
    const { cache } = await setup({ maxEntries: 2 });
    await cache.get('a');
    await cache.get('b');
    await cache.get('a');
    await cache.get('c');
    expect([...cache.held()].map(([k]) => k).sort()).toEqual(['a', 'c']);
  });

  it('reconciles every held value when the subscriber reconnects (announcements may have been missed)', async () => {
    const { cache, source, pubsub } = await setup();
    expect(await cache.get('k')).toBe('k@1');
    await redis.stop();
    await waitFor(async () => pubsub.subscriberStatus !== 'ready');
    source.version = 2;
    await redis.start();
    // Served meanwhile, reconciled in the background by the reads (a lazy cache).
    await waitFor(async () => (await cache.get('k')) === 'k@2', 10_000);
    expect(source.requests.some((r) => r.reason === 'reconcile')).toBe(true);
  });

  it('starts without waiting for Redis, and serves what it loads', async () => {
    const keys = new RedisKeys(`sc${++n}:`);
    // Nothing listens on this port: SUBSCRIBE waits in ioredis' queue.
    const down = 'redis://127.0.0.1:1';
    const publisher = createRedis({ url: down, name: 'pub' });
    const pubsub = new PubSub(publisher, keys, down, 'test');
    open.push({ close: () => publisher.disconnect() }, pubsub);
    const source = new Source();
    const cache = new SubscribedCache<string, string>(pubsub, { name: 'Down', load: source.load }).follow(CHANGED, () => undefined).start();
    open.push(cache);
    expect(await cache.get('k')).toBe('k@1');
    expect(cache.status()).toMatchObject({ subscribed: false });
  });
});
