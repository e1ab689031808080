import { DisposableRedis, waitFor } from '@flagship/testing';
import { PubSub } from './pubsub';
import { createRedis } from './redis.factory';
import { RedisKeys } from './redis-keys';

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
      await pubsub.subscribe('news', (m) => got.push(m));
      await waitFor(async () => pubsub.subscriberStatus === 'ready' && publisher.status === 'ready');
      expect(await pubsub.publish('news', { a: 1 })).toBe(1);
      await waitFor(async () => got.length === 1);
      expect(got).toEqual([{ a: 1 }]);

      let reconnects = 0;
      pubsub.onReconnect(() => reconnects++);
      await redis.stop();
      await waitFor(async () => pubsub.subscriberStatus !== 'ready');
      await redis.start();
      await waitFor(async () => reconnects === 1, 10000);
      await waitFor(async () => publisher.status === 'ready', 10000);
      await pubsub.publish('news', { b: 2 });
      await waitFor(async () => got.length === 2, 5000);
      expect(got[1]).toEqual({ b: 2 });
      expect(reconnects).toBe(1);
    } finally {
      await pubsub.close();
      publisher.disconnect();
    }
  });
});
