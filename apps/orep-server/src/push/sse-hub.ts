import type { ServerResponse } from 'node:http';

export interface SseHubOptions {
  /** Connections held at once by this process; more are refused. */
  maxConnections: number;
  /** Connections from one client address; 0 = no per-address limit. */
  maxPerAddress: number;
  /** A connection whose unsent bytes (in this process, past what the kernel took) exceed this is closed. */
  maxBufferedBytes: number;
  /** A comment line every this many ms keeps proxies from closing an idle stream and finds dead peers. */
  heartbeatMs: number;
}

export type AdmitResult = { ok: true } | { ok: false; reason: 'full' | 'address' };

interface Client {
  res: ServerResponse;
  address: string;
}

const HEARTBEAT = Buffer.from(': keep-alive\n\n');

/**
 * The open server-sent-event streams of this process: admission within the bounds, one heartbeat
 * timer for them all, broadcast of one shared frame, and no unbounded buffering. A client that does
 * not read (its socket's send queue past `maxBufferedBytes`) is closed rather than buffered for;
 * EventSource reconnects, and the reconnect gets what it missed through Last-Event-ID.
 */
export class SseHub {
  private readonly clients = new Set<Client>();
  private readonly perAddress = new Map<string, number>();
  private heartbeat: NodeJS.Timeout | undefined;
  private closed = false;
  /** Streams closed because their client did not read. */
  slowClosed = 0;

  constructor(private readonly options: SseHubOptions) {}

  get size(): number {
    return this.clients.size;
  }

  /** Whether one more connection from `address` fits; call before answering it. */
  admit(address: string): AdmitResult {
    if (this.closed || this.clients.size >= this.options.maxConnections) return { ok: false, reason: 'full' };
    if (this.options.maxPerAddress > 0 && (this.perAddress.get(address) ?? 0) >= this.options.maxPerAddress) return { ok: false, reason: 'address' };
    return { ok: true };
  }

  /** Takes an answered stream (head written) until it closes. */
  add(res: ServerResponse, address: string): void {
    const client: Client = { res, address };
    this.clients.add(client);
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    res.once('close', () => this.remove(client));
    this.heartbeat ??= setInterval(this.beat, this.options.heartbeatMs).unref();
  }

  /** Writes `frame` to one stream, unless its client has stopped reading. */
  write(res: ServerResponse, frame: Buffer): void {
    if (res.destroyed || res.writableEnded) return;
    if (res.writableLength > this.options.maxBufferedBytes) {
      this.slowClosed++;
      res.destroy();
      return;
    }
    res.write(frame);
  }

  broadcast(frame: Buffer): void {
    for (const client of this.clients) this.write(client.res, frame);
  }

  /** Ends every stream and refuses new ones (shutdown: the HTTP server cannot close while they are open). */
  close(): void {
    this.closed = true;
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    for (const client of [...this.clients]) client.res.end();
  }

  private readonly beat = (): void => this.broadcast(HEARTBEAT);

  private remove(client: Client): void {
    if (!this.clients.delete(client)) return;
    const left = (this.perAddress.get(client.address) ?? 1) - 1;
    if (left <= 0) this.perAddress.delete(client.address);
    else this.perAddress.set(client.address, left);
    if (this.clients.size === 0 && this.heartbeat !== undefined) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }
}
