import { DisposableRedis, waitFor } from '@flagship/testing';
import { type Channel } from './channels';
import { PubSub } from './pubsub';
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
    const pubsub = new PubSub(publisher, new RedisKeys('t1:'), redis.url, 'test');
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
    const pubsub = new PubSub(publisher, new RedisKeys('t2:'), redis.url, 'test');
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
