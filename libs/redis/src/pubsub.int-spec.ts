import { DisposableRedis, waitFor } from '@flagship/testing';
import { type Channel } from './channels';
import { type PubSub, RedisPubSub } from './pubsub';
import { FakeBroker, FakePubSub } from './pubsub.fake';
import { createRedis } from './redis.factory';
import { RedisKeys } from './redis-keys';

/** A channel of the test's own: payloads are `{ n: number }`. */
const NEWS: Channel<{ n: number }> = {
  name: 'news',
  check: (m) => (typeof m === 'object' && m !== null && typeof (m as { n?: unknown }).n === 'number' ? { n: (m as { n: number }).n } : undefined),
};

describe('PubSub over a Redis of the test\'s own', () => {
  let redis: DisposableRedis;

  beforeAll(async () => {
    redis = await DisposableRedis.start();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('delivers JSON messages under the key prefix, and tells each reconnection once, even when registered after connecting', async () => {
    const publisher = createRedis({ url: redis.url, name: 'pub' });
    const pubsub = new RedisPubSub(publisher, new RedisKeys('t1:'), redis.url, 'test');
    try {
      const got: unknown[] = [];
      await pubsub.subscribe(NEWS, (m) => got.push(m));
      await waitFor(async () => pubsub.subscriberStatus === 'ready' && publisher.status === 'ready');
      expect(await pubsub.publish(NEWS, { n: 1 })).toBe(1);
      await waitFor(async () => got.length === 1);
      expect(got).toEqual([{ n: 1 }]);

      let reconnects = 0;
      pubsub.onReconnect(() => reconnects++);
      await redis.stop();
      await waitFor(async () => pubsub.subscriberStatus !== 'ready');
      await redis.start();
      await waitFor(async () => reconnects === 1, 10000);
      await waitFor(async () => publisher.status === 'ready', 10000);
      await pubsub.publish(NEWS, { n: 2 });
      await waitFor(async () => got.length === 2, 5000);
      expect(got[1]).toEqual({ n: 2 });
      expect(reconnects).toBe(1);
    } finally {
      await pubsub.close();
      publisher.disconnect();
    }
  });

  it('hands a subscriber only payloads that pass the channel\'s check, and counts the others', async () => {
    const publisher = createRedis({ url: redis.url, name: 'pub' });
    const pubsub = new RedisPubSub(publisher, new RedisKeys('t2:'), redis.url, 'test');
    try {
      const got: Array<{ n: number }> = [];
      await pubsub.subscribe(NEWS, (m) => got.push(m));
      await waitFor(async () => pubsub.subscriberStatus === 'ready' && publisher.status === 'ready');
      const raw = new RedisKeys('t2:').channel('news');
      await publisher.publish(raw, 'not json');
      await publisher.publish(raw, JSON.stringify({ n: 'one' }));
      await publisher.publish(raw, JSON.stringify([1]));
      await pubsub.publish(NEWS, { n: 3 });
      await waitFor(async () => got.length === 1);
      expect(got).toEqual([{ n: 3 }]);
      expect(pubsub.rejected).toBe(3);
    } finally {
      await pubsub.close();
      publisher.disconnect();
    }
  });
});

/** Two subscribers on one transport, and a way to PUBLISH anything on it. */
interface Transport {
  open(): PubSub;
  publishRaw(channelName: string, raw: string): Promise<void>;
  close(): Promise<void>;
}

const redisTransport = async (): Promise<Transport> => {
  const redis = await DisposableRedis.start();
  const publisher = createRedis({ url: redis.url, name: 'pub' });
  const keys = new RedisKeys('shared:');
  const opened: PubSub[] = [];
  return {
    open: () => {
      const p = new RedisPubSub(publisher, keys, redis.url, 'test');
      opened.push(p);
      return p;
    },
    publishRaw: async (name, raw) => void (await publisher.publish(keys.channel(name), raw)),
    close: async () => {
      for (const p of opened) await p.close();
      publisher.disconnect();
      await redis.stop();
    },
  };
};

const fakeTransport = async (): Promise<Transport> => {
  const broker = new FakeBroker();
  return {
    open: () => new FakePubSub(broker),
    publishRaw: async (name, raw) => void new FakePubSub(broker).publishRaw(name, raw),
    close: async () => undefined,
  };
};

/** The same cases over Redis and over FakePubSub: the fake the unit specs use behaves as the real one. */
describe.each([
  ['Redis', redisTransport],
  ['the fake', fakeTransport],
])('PubSub over %s', (_name, make) => {
  let t: Transport;
  beforeEach(async () => {
    t = await make();
  });
  afterEach(async () => {
    await t.close();
  });

  it('reaches every subscriber of the channel, each handler in the order it subscribed; publish counts the subscribers', async () => {
    const [a, b] = [t.open(), t.open()];
    const heard: string[] = [];
    await a.subscribe(NEWS, (m) => heard.push(`a1:${m.n}`));
    await a.subscribe(NEWS, (m) => heard.push(`a2:${m.n}`));
    await b.subscribe(NEWS, (m) => heard.push(`b:${m.n}`));
    await waitFor(async () => a.subscriberStatus === 'ready' && b.subscriberStatus === 'ready');
    expect(await a.publish(NEWS, { n: 1 })).toBe(2);
    await waitFor(async () => heard.length === 3);
    expect(heard.filter((h) => h.startsWith('a'))).toEqual(['a1:1', 'a2:1']);
    expect(heard).toContain('b:1');
  });

  it('hands over only payloads that pass the check, counting the others; an unsubscribed handler hears nothing more', async () => {
    const p = t.open();
    const got: number[] = [];
    const kept: number[] = [];
    const off = await p.subscribe(NEWS, (m) => got.push(m.n));
    await p.subscribe(NEWS, (m) => kept.push(m.n));
    await waitFor(async () => p.subscriberStatus === 'ready');
    await t.publishRaw('news', 'not json');
    await t.publishRaw('news', JSON.stringify({ n: 'one' }));
    await t.publishRaw('news', JSON.stringify({ n: 2, extra: true }));
    await waitFor(async () => got.length === 1);
    expect([got, p.rejected]).toEqual([[2], 2]);
    await off();
    await p.publish(NEWS, { n: 3 });
    await waitFor(async () => kept.length === 2);
    expect([got, kept]).toEqual([[2], [2, 3]]);
  });

  it('a channel nobody subscribes to reaches no one', async () => {
    const p = t.open();
    const off = await p.subscribe(NEWS, () => undefined);
    await off();
    expect(await p.publish(NEWS, { n: 1 })).toBe(0);
  });
});
