import type { ServerResponse } from 'node:http';
import { addressBucket } from '@flagship/service-kit';

export interface SseHubOptions {
  /** Connections held at once by this process; more are refused. */
  maxConnections: number;
  /** Connections from one client address (IPv6: one /64); 0 = no per-address limit. */
  maxPerAddress: number;
  /** A connection whose unsent bytes (in this process, past what the kernel took) exceed this is closed. */
  maxBufferedBytes: number;
  /** A comment line every this many ms keeps proxies from closing an idle stream and finds dead peers. */
  heartbeatMs: number;
}

export type AdmitResult = { ok: true } | { ok: false; reason: 'full' | 'address' };

/** What a stream was opened with: the key it was granted to, and when its access ends (ms since the epoch), if it does. */
export interface StreamGrant {
  keyId: string;
  expiresAt?: number;
}

interface Client {
  res: ServerResponse;
  /** What the per-address limit counts it as (addressBucket). */
  group: string;
  keyId: string;
  expiresAt: number | undefined;
}

const HEARTBEAT = Buffer.from(': keep-alive\n\n');
/** setTimeout's longest delay; a later expiry is re-armed when this one fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The open server-sent-event streams of this process: admission within the bounds, one heartbeat
 * timer for them all, broadcast of one shared frame, and no unbounded buffering. A client that does
 * not read (its socket's send queue past `maxBufferedBytes`) is closed rather than buffered for;
 * EventSource reconnects, and the reconnect gets what it missed through Last-Event-ID.
 *
 * A stream lasts no longer than what opened it: it ends when its token expires (one timer for the
 * earliest expiry; tokens expire in steps, so streams share few expiry times) and when its key is
 * rotated out (endKeys). Its client reconnects with the URL it holds, which is then refused, and
 * fetches a new one.
 */
export class SseHub {
  private readonly clients = new Set<Client>();
  private readonly perAddress = new Map<string, number>();
  private readonly expiries = new Map<number, Set<Client>>();
  private heartbeat: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private expiryAt = Infinity;
  private closed = false;
  /** Streams closed because their client did not read. */
  slowClosed = 0;
  /** Streams ended because their token expired or their key was rotated out. */
  accessEnded = 0;

  constructor(private readonly options: SseHubOptions) {}

  get size(): number {
    return this.clients.size;
  }

  /** Whether one more connection from `address` fits; call before answering it. */
  admit(address: string): AdmitResult {
    if (this.closed || this.clients.size >= this.options.maxConnections) return { ok: false, reason: 'full' };
    if (this.options.maxPerAddress > 0 && (this.perAddress.get(addressBucket(address)) ?? 0) >= this.options.maxPerAddress) return { ok: false, reason: 'address' };
    return { ok: true };
  }

  /** Takes an answered stream (head written) until it closes, or its grant ends. */
  add(res: ServerResponse, address: string, grant: StreamGrant): void {
    const client: Client = { res, group: addressBucket(address), keyId: grant.keyId, expiresAt: grant.expiresAt };
    this.clients.add(client);
    this.perAddress.set(client.group, (this.perAddress.get(client.group) ?? 0) + 1);
    res.once('close', () => this.remove(client));
    this.heartbeat ??= setInterval(this.beat, this.options.heartbeatMs).unref();
    if (client.expiresAt !== undefined) {
      const due = this.expiries.get(client.expiresAt);
      if (due) due.add(client);
      else this.expiries.set(client.expiresAt, new Set([client]));
      if (client.expiresAt < this.expiryAt) this.armExpiry();
    }
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

  /** Ends the streams opened with these keys (rotated out: their access is withdrawn). */
  endKeys(keyIds: ReadonlySet<string>): void {
    for (const client of [...this.clients]) if (keyIds.has(client.keyId)) this.end(client);
  }

  /** Ends every stream and refuses new ones (shutdown: the HTTP server cannot close while they are open). */
  close(): void {
    this.closed = true;
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    for (const client of [...this.clients]) client.res.end();
  }

  private readonly beat = (): void => this.broadcast(HEARTBEAT);

  /** Ends one stream whose access is over: cleanly, or at once when its client is not reading anyway. */
  private end(client: Client): void {
    this.accessEnded++;
    if (client.res.writableLength > 0) client.res.destroy();
    else client.res.end();
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    let next = Infinity;
    for (const at of this.expiries.keys()) if (at < next) next = at;
    this.expiryAt = next;
    if (next === Infinity || this.closed) return;
    this.expiryTimer = setTimeout(this.expire, Math.min(Math.max(0, next - Date.now()), MAX_TIMER_MS)).unref();
  }

  private readonly expire = (): void => {
    const now = Date.now();
    for (const [at, due] of this.expiries) {
      if (at > now) continue;
      this.expiries.delete(at);
      for (const client of due) this.end(client);
    }
    this.armExpiry();
  };

  private remove(client: Client): void {
    if (!this.clients.delete(client)) return;
    const left = (this.perAddress.get(client.group) ?? 1) - 1;
    if (left <= 0) this.perAddress.delete(client.group);
    else this.perAddress.set(client.group, left);
    if (client.expiresAt !== undefined) {
      const due = this.expiries.get(client.expiresAt);
      due?.delete(client);
      if (due?.size === 0) this.expiries.delete(client.expiresAt);
    }
    if (this.clients.size === 0 && this.heartbeat !== undefined) {
      clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    }
  }
}
