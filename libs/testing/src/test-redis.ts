import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';

export const TEST_REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

export interface TestRedisPrefix {
  prefix: string;
  url: string;
  /** Deletes every key under the prefix. */
  cleanup(): Promise<void>;
}

/** A key prefix of one test file's own, on the shared Redis server. */
export function createTestRedisPrefix(): TestRedisPrefix {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  return {
    prefix,
    url: TEST_REDIS_URL,
    cleanup: async () => {
      const client = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await client.connect();
      try {
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          cursor = next;
          if (keys.length) await client.unlink(...keys);
        } while (cursor !== '0');
      } finally {
        client.disconnect();
      }
    },
  };
}
