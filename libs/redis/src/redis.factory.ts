import Redis, { type RedisOptions } from 'ioredis';

export interface RedisConnectionOptions {
  url: string;
  /** Shown in CLIENT LIST, to tell the apps' connections apart. */
  name: string;
  /** Subscribers must keep their offline queue; commands should fail fast instead of piling up. */
  subscriber?: boolean;
}

/**
 * The one way the apps open a Redis connection. Commands fail fast while Redis is down (no
 * unbounded offline queue), and the client keeps reconnecting with a capped backoff.
 */
export function createRedis(options: RedisConnectionOptions): Redis {
  const base: RedisOptions = {
    connectionName: options.name,
    lazyConnect: false,
    enableReadyCheck: true,
    maxRetriesPerRequest: options.subscriber ? null : 1,
    enableOfflineQueue: options.subscriber ?? false,
    connectTimeout: 2000,
    // A Redis that stops answering without closing the socket must not hold a request either
    // (no app runs blocking commands on this client). Subscribers wait for messages by design.
    ...(options.subscriber ? {} : { commandTimeout: 2000 }),
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  };
  const client = new Redis(options.url, base);
  // Without a listener ioredis prints every reconnection failure; readiness reports them instead.
  client.on('error', () => undefined);
  return client;
}

/**
 * Resolves true once the client is ready, or false after `timeoutMs` while it keeps connecting: for
 * a read at start-up that would otherwise run before the connection is up (createRedis keeps no
 * offline queue, so such a command fails at once) and leave the app without it until its next retry.
 */
export function whenReady(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const ready = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      client.off('ready', ready);
      resolve(false);
    }, timeoutMs);
    client.once('ready', ready);
  });
}

/** Resolves when the client is ready, or rejects after the timeout. */
export async function pingRedis(client: Redis, timeoutMs = 1000): Promise<void> {
  if (client.status !== 'ready') throw new Error(`connection is ${client.status}`);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
