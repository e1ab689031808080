import type { Channel } from './channels';
import { PubSub } from './pubsub';

type Handler = (message: unknown) => void;

/** What several FakePubSubs share, as processes share one Redis: a message reaches every one subscribed. */
export class FakeBroker {
  readonly members = new Set<FakePubSub>();
}

/**
 * The in-memory twin of RedisPubSub for unit specs (pubsub.int-spec.ts runs the same cases over
 * both). A message goes through JSON and its channel's check as over Redis, and reaches the handlers
 * before `publish` resolves. `disconnect()` and `reconnect()` play a dropped subscriber connection:
 * what is published meanwhile is lost, subscriptions wait, and the reconnection is told.
 */
export class FakePubSub extends PubSub {
  private readonly handlers = new Map<string, { check: (m: unknown) => unknown; set: Set<Handler> }>();
  private readonly reconnectListeners: Array<() => void> = [];
  private connected = true;
  private closed = false;
  private waiting: Array<() => void> = [];

  constructor(readonly broker = new FakeBroker()) {
    super();
    broker.members.add(this);
  }

  override async publish<T>(channel: Channel<T>, message: T): Promise<number> {
    return this.publishRaw(channel.name, JSON.stringify(message));
  }

  /** A message as anyone may PUBLISH it (another version of the app, a hand-typed command). */
  publishRaw(channelName: string, raw: string): number {
    let received = 0;
    for (const member of this.broker.members) if (member.deliver(channelName, raw)) received++;
    return received;
  }

  override async subscribe<T>(channel: Channel<T>, handler: (message: T) => void): Promise<() => Promise<void>> {
    let entry = this.handlers.get(channel.name);
    if (entry === undefined) this.handlers.set(channel.name, (entry = { check: channel.check, set: new Set() }));
    const h = handler as Handler;
    entry.set.add(h);
    if (!this.connected) await new Promise<void>((resolve) => this.waiting.push(resolve));
    const set = entry.set;
    return async () => {
      set.delete(h);
      if (set.size === 0 && this.handlers.get(channel.name)?.set === set) this.handlers.delete(channel.name);
    };
  }

  override onReconnect(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  override get subscriberStatus(): string {
    return this.closed ? 'end' : this.connected ? 'ready' : 'reconnecting';
  }

  override async close(): Promise<void> {
    this.closed = true;
    this.connected = false;
    this.broker.members.delete(this);
  }

  /** The subscriber connection drops: messages published from now on do not arrive here. */
  disconnect(): void {
    this.connected = false;
  }

  /** It is back: waiting subscriptions take effect, then every onReconnect listener is called. */
  reconnect(): void {
    if (this.closed) return;
    this.connected = true;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
    for (const listener of this.reconnectListeners) listener();
  }

  /** Whether this subscriber received the message (it has handlers for the channel and is connected). */
  private deliver(channelName: string, raw: string): boolean {
    const entry = this.handlers.get(channelName);
    if (entry === undefined || !this.connected) return false;
    let message: unknown;
    try {
      message = entry.check(JSON.parse(raw));
    } catch {
      message = undefined;
    }
    if (message === undefined) this.rejected++;
    else for (const h of [...entry.set]) h(message);
    return true;
  }
}
