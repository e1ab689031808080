import { DisposableRedis, waitFor } from '@flagship/testing';
import { RedisPubSub } from './pubsub';
import { createRedis } from './redis.factory';
import { RedisKeys } from './redis-keys';
import { SubscribedCache } from './subscribed-cache';
import { CHANGED, Source } from './subscribed-cache.fixture';

/**
 * What only Redis can break: announcements over a real subscriber connection, its reconnection, and
 * starting while Redis is down. The cache's rules (stale serving, serveStaleOn, expiry, eager
 * reloads and retries, reconciles, bounds, holds) are proven over FakePubSub in subscribed-cache.spec.ts.
 */
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
    const pubsub = new RedisPubSub(publisher, keys, redis.url, 'test');
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
    const pubsub = new RedisPubSub(publisher, keys, down, 'test');
    open.push({ close: () => publisher.disconnect() }, pubsub);
    const source = new Source();
    const cache = new SubscribedCache<string, string>(pubsub, { name: 'Down', load: source.load }).follow(CHANGED, () => undefined).start();
    open.push(cache);
    expect(await cache.get('k')).toBe('k@1');
    expect(cache.status()).toMatchObject({ subscribed: false });
  });
});
