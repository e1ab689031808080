import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import type { Channel } from './channels';
import { createRedis } from './redis.factory';
import type { RedisKeys } from './redis-keys';

type Handler = (message: unknown) => void;

/**
 * The change feed's transport (the port): typed JSON publish/subscribe over the channels of
 * channels.ts. A message that is not JSON or fails its channel's check reaches no handler; it is
 * counted in `rejected`. RedisPubSub is the one the apps run; FakePubSub (pubsub.fake.ts) the
 * in-memory twin for unit specs, proven to agree in pubsub.int-spec.ts.
 */
export abstract class PubSub {
  /** Messages dropped because they were not JSON or failed their channel's check. */
  rejected = 0;

  /** Publishes `message`; resolves with the number of subscribers (connections) that received it. */
  abstract publish<T>(channel: Channel<T>, message: T): Promise<number>;

  /**
   * `handler` gets each checked payload, handlers of a channel in the order they subscribed. The
   * returned promise settles once the subscription is in force (with Redis down it waits: callers
   * that must not block start-up don't await it); it resolves with the unsubscribe.
   */
  abstract subscribe<T>(channel: Channel<T>, handler: (message: T) => void): Promise<() => Promise<void>>;

  /** Calls `listener` each time the subscriber is connected again after a drop (announcements may have been missed). */
  abstract onReconnect(listener: () => void): void;

  /** 'ready' while subscribed messages arrive. */
  abstract get subscriberStatus(): string;

  abstract close(): Promise<void>;
}

/**
 * PubSub over Redis: one dedicated subscriber connection (a subscribed ioredis client can run no
 * other command); channel names are prefixed by RedisKeys; a rejected message is logged once per channel.
 */
export class RedisPubSub extends PubSub {
  private readonly logger = new Logger('PubSub');
  private readonly subscriber: Redis;
  /** Per prefixed channel name: its check and its handlers (of checked payloads). */
  private readonly handlers = new Map<string, { check: (m: unknown) => unknown; set: Set<Handler> }>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly publisher: Redis,
    private readonly keys: RedisKeys,
    url: string,
    name: string,
  ) {
    super();
    this.subscriber = createRedis({ url, name: `${name}-sub`, subscriber: true });
    this.subscriber.on('message', (channel: string, raw: string) => {
      const entry = this.handlers.get(channel);
      if (!entry) return;
      let message: unknown;
      try {
        message = entry.check(JSON.parse(raw));
      } catch {
        message = undefined;
      }
      if (message === undefined) return this.reject(channel);
      for (const h of entry.set) h(message);
    });
    // Every channel with handlers is subscribed again whenever the connection is ready (SUBSCRIBE is
    // idempotent): ioredis' own resubscription after a drop can miss channels, and a lost channel is
    // silent (seen under load: revocation and membership announcements stopped arriving).
    this.subscriber.on('ready', () => {
      const channels = [...this.handlers.keys()];
      if (channels.length > 0) this.subscriber.subscribe(...channels).catch(() => undefined);
    });
  }

  override async publish<T>(channel: Channel<T>, message: T): Promise<number> {
    return this.publisher.publish(this.keys.channel(channel.name), JSON.stringify(message));
  }

  /** Settles once SUBSCRIBE is answered (with Redis down it waits in ioredis' queue). */
  override async subscribe<T>(channel: Channel<T>, handler: (message: T) => void): Promise<() => Promise<void>> {
    const full = this.keys.channel(channel.name);
    let entry = this.handlers.get(full);
    const h = handler as Handler;
    if (!entry) {
      entry = { check: channel.check, set: new Set() };
      this.handlers.set(full, entry);
      entry.set.add(h);
      await this.subscriber.subscribe(full);
    } else entry.set.add(h);
    const set = entry.set;
    return async () => {
      set.delete(h);
      if (set.size === 0) {
        this.handlers.delete(full);
        await this.subscriber.unsubscribe(full);
      }
    };
  }

  override onReconnect(listener: () => void): void {
    // The connection's first 'ready' is not a reconnect, unless it already happened before this call.
    let first = this.subscriber.status !== 'ready';
    this.subscriber.on('ready', () => {
      if (first) {
        first = false;
        return;
      }
      listener();
    });
  }

  private reject(channel: string): void {
    this.rejected++;
    if (this.warned.has(channel)) return;
    this.warned.add(channel);
    this.logger.warn(`dropped a message on ${channel} that is not of the channel's payload type (further ones are counted, not logged)`);
  }

  override get subscriberStatus(): string {
    return this.subscriber.status;
  }

  override async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
