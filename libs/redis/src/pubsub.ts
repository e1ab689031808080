import type Redis from 'ioredis';
import { createRedis } from './redis.factory';
import type { RedisKeys } from './redis-keys';

export type MessageHandler = (message: unknown) => void;

/**
 * JSON publish/subscribe over one dedicated subscriber connection (a subscribed ioredis client can
 * run no other command). Channel names are prefixed by RedisKeys.
 */
export class PubSub {
  private readonly subscriber: Redis;
  private readonly handlers = new Map<string, Set<MessageHandler>>();

  constructor(
    private readonly publisher: Redis,
    private readonly keys: RedisKeys,
    url: string,
    name: string,
  ) {
    this.subscriber = createRedis({ url, name: `${name}-sub`, subscriber: true });
    this.subscriber.on('message', (channel: string, raw: string) => {
      const set = this.handlers.get(channel);
      if (!set) return;
      let message: unknown;
      try {
        message = JSON.parse(raw);
      } catch {
        return; // not ours
      }
      for (const h of set) h(message);
    });
    // Every channel with handlers is subscribed again whenever the connection is ready (SUBSCRIBE is
    // idempotent): ioredis' own resubscription after a drop can miss channels, and a lost channel is
    // silent (seen under load: revocation and membership announcements stopped arriving).
    this.subscriber.on('ready', () => {
      const channels = [...this.handlers.keys()];
      if (channels.length > 0) this.subscriber.subscribe(...channels).catch(() => undefined);
    });
  }

  async publish(channel: string, message: unknown): Promise<number> {
    return this.publisher.publish(this.keys.channel(channel), JSON.stringify(message));
  }

  async subscribe(channel: string, handler: MessageHandler): Promise<() => Promise<void>> {
    const full = this.keys.channel(channel);
    let set = this.handlers.get(full);
    if (!set) {
      set = new Set();
      this.handlers.set(full, set);
      await this.subscriber.subscribe(full);
    }
    set.add(handler);
    return async () => {
      set.delete(handler);
      if (set.size === 0) {
        this.handlers.delete(full);
        await this.subscriber.unsubscribe(full);
      }
    };
  }

  /** Calls `listener` each time the subscriber connection is ready again after a drop. */
  onReconnect(listener: () => void): void {
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

  get subscriberStatus(): string {
    return this.subscriber.status;
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
