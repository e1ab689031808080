import { EventEmitter } from 'node:events';
import type { SseSink } from './sse-hub';

/**
 * A stream as a client holds it, for unit specs: what was written, and a client that reads or not.
 * `reading = false` keeps everything written unread (writableLength grows, write answers false)
 * until `read()`; ending or destroying it closes it, as node:http does.
 */
export class FakeSink extends EventEmitter implements SseSink {
  readonly written: string[] = [];
  unread = 0;
  destroyed = false;
  writableEnded = false;
  /** Set by `end`: what it ended with. */
  endedWith: string | undefined;

  constructor(
    public reading = true,
    /** What write takes before it answers false (node's highWaterMark). */
    private readonly highWaterMark = 16 * 1024,
  ) {
    super();
  }

  get writableLength(): number {
    return this.unread;
  }

  /** Everything written, as one text. */
  get text(): string {
    return this.written.join('');
  }

  write(chunk: string | Buffer): boolean {
    this.written.push(chunk.toString());
    if (this.reading) return true;
    this.unread += chunk.length;
    return this.unread < this.highWaterMark;
  }

  end(chunk?: string | Buffer): void {
    if (chunk !== undefined) this.written.push(chunk.toString());
    this.endedWith = chunk?.toString() ?? '';
    this.writableEnded = true;
    this.emit('close');
  }

  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }

  /** The client takes what is unread. */
  read(): void {
    const had = this.unread;
    this.unread = 0;
    if (had > 0) this.emit('drain');
  }
}
