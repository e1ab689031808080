import type { Channel } from './channels';
import type { LoadRequest } from './subscribed-cache';

/** `{ key, part? }`: a test channel announcing a change to a key, or to one part of it. */
export const CHANGED: Channel<{ key: string; part?: string }> = {
  name: 'changed',
  check: (m) => {
    const { key, part } = m as { key?: unknown; part?: unknown };
    if (typeof key !== 'string') return undefined;
    return typeof part === 'string' ? { key, part } : { key };
  },
};

/** A source of values whose reads are recorded and can be made to fail or wait. */
export class Source {
  version = 1;
  failing: Error | undefined;
  gate: Promise<void> | undefined;
  readonly requests: Array<{ key: string; reason: string; changed: string[] }> = [];
  /** When each request was made (ms since the epoch), in the order of `requests`. */
  readonly times: number[] = [];

  load = async (key: string, r: LoadRequest<string>): Promise<string> => {
    this.requests.push({ key, reason: r.reason, changed: [...r.changed].sort() });
    this.times.push(Date.now());
    const version = this.version;
    await this.gate;
    if (this.failing) throw this.failing;
    return `${key}@${version}`;
  };

  reasons(): string[] {
    return this.requests.map((r) => r.reason);
  }
}
