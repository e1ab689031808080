import type { ServerResponse } from 'node:http';
import { addressBucket } from '@flagship/service-kit';
import { SseHub as Hub } from '@flagship/sse';

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

/** One push stream: what the bounds count it as, and the key that opened it. */
export interface PushStream {
  /** addressBucket of the client's address. */
  group: string;
  keyId: string;
}

type End = 'expired' | 'revoked' | 'shutdown';

const HEARTBEAT = Buffer.from(': keep-alive\n\n');

/**
 * The OFREP push streams of this process on the SSE kit: at most `maxConnections` (503 past it)
 * and `maxPerAddress` per client network (429), comment heartbeats, a client that does not read cut
 * off rather than buffered for (EventSource reconnects with Last-Event-ID). A stream lasts no longer
 * than what opened it: it ends when its URL token expires and when its key is rotated out
 * (`endKeys`); its client reconnects with the URL it holds, is refused, and fetches a new one.
 */
export class SseHub {
  private readonly hub: Hub<PushStream, End>;

  constructor(options: SseHubOptions) {
    this.hub = new Hub<PushStream, End>({
      bounds: [
        { name: 'full', key: () => '', limit: () => options.maxConnections },
        { name: 'address', key: (s) => (options.maxPerAddress > 0 ? s.group : undefined), limit: () => options.maxPerAddress },
      ],
      maxBufferedBytes: options.maxBufferedBytes,
      heartbeatMs: options.heartbeatMs,
      heartbeat: HEARTBEAT,
    });
  }

  get size(): number {
    return this.hub.size;
  }

  /** Streams closed because their client did not read. */
  get slowClosed(): number {
    return this.hub.cutOff;
  }

  /** Streams ended because their token expired or their key was rotated out. */
  get accessEnded(): number {
    return (this.hub.ends.get('expired') ?? 0) + (this.hub.ends.get('revoked') ?? 0);
  }

  /** Counts a stream from `address` at once, before it is answered (`attach`), or says why not. */
  admit(address: string, grant: StreamGrant): PushStream | 'full' | 'address' {
    const stream: PushStream = { group: addressBucket(address), keyId: grant.keyId };
    const decision = this.hub.admit(stream);
    if (!decision.admitted) return decision.bound === 'address' ? 'address' : 'full';
    if (grant.expiresAt !== undefined) this.hub.deadline(stream, grant.expiresAt, 'expired');
    return stream;
  }

  /** The admitted stream is answered on `res` (head written): heartbeats and events until it closes or ends. */
  attach(stream: PushStream, res: ServerResponse): void {
    this.hub.attach(stream, res);
  }

  /** An admitted stream that was never answered (its client left first). */
  release(stream: PushStream): void {
    this.hub.release(stream);
  }

  /** Admits and attaches at once (a stream answered already). */
  add(res: ServerResponse, address: string, grant: StreamGrant): AdmitResult {
    const stream = this.admit(address, grant);
    if (typeof stream === 'string') return { ok: false, reason: stream };
    this.attach(stream, res);
    return { ok: true };
  }

  /** Writes `frame` to one stream, unless its client has stopped reading. */
  write(stream: PushStream, frame: Buffer): void {
    this.hub.write(stream, frame);
  }

  broadcast(frame: Buffer): void {
    this.hub.broadcast(frame);
  }

  /** Ends the streams opened with these keys (rotated out: their access is withdrawn). */
  endKeys(keyIds: ReadonlySet<string>): void {
    this.hub.endWhere((s) => keyIds.has(s.keyId), 'revoked');
  }

  /** Ends every stream and refuses new ones (shutdown: the HTTP server cannot close while they are open). */
  close(): void {
    this.hub.close('shutdown');
  }
}
