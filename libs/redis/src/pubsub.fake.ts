import type { Channel } from './channels';
import type { PubSub } from './pubsub';

/** What a service publishes on the change feed, recorded in memory for unit specs; `down` makes publishing fail as an unreachable Redis does. */
export class RecordingPublisher implements Pick<PubSub, 'publish'> {
  readonly sent: Array<{ channel: string; message: unknown }> = [];
  down = false;

  async publish<T>(channel: Channel<T>, message: T): Promise<number> {
    if (this.down) throw new Error('redis down');
    this.sent.push({ channel: channel.name, message });
    return 1;
  }
}
