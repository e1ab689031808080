import { readServerSentEvents } from '@flagship/sdk';

export interface Received {
  event: string;
  id: string | undefined;
  data: any;
}

/** An open flag-data stream read in the background; `next` waits for the next event (comments skipped). */
export class OpenStream {
  readonly events: Received[] = [];
  private read = 0;
  private wake: (() => void) | undefined;
  ended = false;

  constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {
    void (async () => {
      try {
        for await (const e of readServerSentEvents(response.body!)) {
          if (e.kind === 'event') this.events.push({ event: e.event, id: e.id, data: JSON.parse(e.data) });
          this.wake?.();
        }
      } catch {
        // aborted by close()
      }
      this.ended = true;
      this.wake?.();
    })();
  }

  async next(timeoutMs = 5000): Promise<Received> {
    await this.until(() => this.read < this.events.length || this.ended, timeoutMs, 'an event');
    if (this.read >= this.events.length) throw new Error('the stream ended');
    return this.events[this.read++]!;
  }

  /** Resolves once the server has ended the stream, with how long that took; throws when it is still open after `timeoutMs`. */
  async whenEnded(timeoutMs = 5000): Promise<number> {
    const started = Date.now();
    await this.until(() => this.ended, timeoutMs, 'end of the stream');
    return Date.now() - started;
  }

  close(): void {
    this.controller.abort();
  }

  private async until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }
}

export interface Opened {
  status: number;
  stream?: OpenStream;
  problem?: any;
  retryAfter?: string | null;
}

/** Opens flag-data streams on one API (GET /api/flag-stream) and closes what it opened. */
export class FlagStreamClient {
  private readonly opened: OpenStream[] = [];

  constructor(private readonly baseUrl: () => string) {}

  /** The stream when answered 200 (an event stream), else the status, problem and Retry-After. */
  async open(headers: Record<string, string>, query = ''): Promise<Opened> {
    const controller = new AbortController();
    const res = await fetch(`${this.baseUrl()}/api/flag-stream${query}`, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
    if (res.status !== 200) return { status: res.status, problem: await res.json().catch(() => undefined), retryAfter: res.headers.get('retry-after') };
    if (!/^text\/event-stream/.test(res.headers.get('content-type') ?? '')) throw new Error(`200 with ${res.headers.get('content-type')}, not an event stream`);
    const stream = new OpenStream(res, controller);
    this.opened.push(stream);
    return { status: 200, stream };
  }

  closeAll(): void {
    for (const s of this.opened.splice(0)) s.close();
  }
}
