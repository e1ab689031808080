import { get, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';

/** One server-sent event as a client parses it (the WHATWG rules, enough for our streams). */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  /** Comment lines (`: ...`). */
  comments: string[];
}

/**
 * A raw SSE reader for tests: the status and headers as sent, and every frame including comments
 * (which EventSource clients hide), so that heartbeats and the exact wire format can be checked.
 */
export class RawSse {
  readonly frames: SseFrame[] = [];
  status = 0;
  headers: IncomingHttpHeaders = {};
  ended = false;
  private res: IncomingMessage | undefined;
  private rest = '';

  static open(url: string, headers: Record<string, string> = {}): Promise<RawSse> {
    const sse = new RawSse();
    return new Promise((resolve, reject) => {
      const req = get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
        sse.res = res;
        sse.status = res.statusCode ?? 0;
        sse.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => sse.take(chunk));
        res.on('close', () => (sse.ended = true));
        res.on('error', () => (sse.ended = true));
        resolve(sse);
      });
      req.on('error', reject);
    });
  }

  /** The events (frames with data). */
  get events(): SseFrame[] {
    return this.frames.filter((f) => f.data !== undefined);
  }

  close(): void {
    this.res?.destroy();
  }

  private take(chunk: string): void {
    this.rest += chunk;
    let end: number;
    while ((end = this.rest.indexOf('\n\n')) >= 0) {
      const block = this.rest.slice(0, end);
      this.rest = this.rest.slice(end + 2);
      const frame: SseFrame = { comments: [] };
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) frame.comments.push(line.slice(1).trim());
        else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') frame.id = value;
          else if (field === 'event') frame.event = value;
          else if (field === 'data') frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
        }
      }
      this.frames.push(frame);
    }
  }
}
