import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Exchange } from '@flagship/lean-http';
import { clientAddress } from '@flagship/service-kit';
import type { Caller, OrepKeys } from '../keys/orep-keys';
import type { FlagSource } from '../sources/flag-source';
import { REFETCH_EVENTS_DEFAULTS, RefetchEvents, type RefetchEventsOptions } from './refetch-events';
import { SseHub, type SseHubOptions } from './sse-hub';
import { SseTokens } from './sse-token';

/** The SSE route (OFREP leaves its path to the server: the URL handed out is opaque to providers). */
export const SSE_PATH = '/ofrep/v1/events';

export interface OfrepPushOptions extends SseHubOptions {
  /** OREP_AUTH_TOKEN: keys the URL tokens. */
  secret: string;
  /** What URL tokens are good for (this server's tenant and environment, or its file). */
  scope: string;
  tokenTtlS: number;
  /** Told to providers as `inactivityDelaySec`. */
  inactivityDelaySec: number;
  /** OREP_PUBLIC_URL: the origin clients reach this server at; '' = from each request's Host. */
  publicUrl: string;
  /** Proxy hops trusted (TRUST_PROXY): X-Forwarded-Proto is believed only behind one. */
  trustProxy: number;
  /** The keys in force: a stream is tied to the one that opened it (or minted its URL). */
  keys: OrepKeys;
  refetches?: RefetchEventsOptions;
}

/** Who opened a stream, and until when (a URL token's expiry, ms since the epoch). */
export interface StreamAccess {
  caller: Caller;
  expiresAt?: number;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  // nginx (and ingress-nginx) would otherwise buffer the stream.
  'x-accel-buffering': 'no',
  // The token travels in the URL, never in a cookie, so any origin may read the stream it holds a URL for.
  'access-control-allow-origin': '*',
};
/** How long EventSource waits before reconnecting (ms). */
const OPENING = Buffer.from('retry: 2000\n\n');
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * OFREP push (ADR-0008): the bulk answer's `eventStreams` (and `refreshConnections`, the ADR's earlier
 * name), the SSE route that tells providers to re-fetch, and the `flagConfigEtag` rule of the bulk
 * route. Everything here reads the FlagSource through its interface only (liveSet, onChange).
 */
export class OfrepPush {
  readonly refetches: RefetchEvents;
  readonly hub: SseHub;
  private readonly tokens: SseTokens;
  private readonly unsubscribeKeys: () => void;

  constructor(
    private readonly source: FlagSource,
    private readonly options: OfrepPushOptions,
  ) {
    this.hub = new SseHub(options);
    this.refetches = new RefetchEvents(source, this.hub, options.refetches ?? REFETCH_EVENTS_DEFAULTS);
    this.tokens = new SseTokens(options.secret, options.scope, options.tokenTtlS);
    // A key rotated out withdraws access: what it opened ends now, not at its token's expiry.
    this.unsubscribeKeys = options.keys.onRevoked((keyIds) => this.hub.endKeys(keyIds));
  }

  /**
   * The SSE route's authentication: the header key as on every OFREP route, or else the URL's
   * `token` (a browser's EventSource cannot send headers), good while it has not expired and the
   * key that minted it is still in force.
   */
  authenticate(x: Exchange): StreamAccess | 'missing' | 'invalid' {
    const headers = x.req.headers;
    if (headers.authorization !== undefined || headers['x-api-key'] !== undefined) {
      const caller = this.options.keys.identify(headers);
      return typeof caller === 'string' ? caller : { caller };
    }
    const token = queryOf(x.req.url)?.get('token');
    if (token === undefined || token === null) return 'missing';
    const grant = this.tokens.verify(token);
    const caller = grant && this.options.keys.callerOf(grant.keyId);
    return caller ? { caller, expiresAt: grant.exp * 1000 } : 'invalid';
  }

  /** GET /ofrep/v1/events, authenticated: holds the stream open and replays from Last-Event-ID. */
  open(x: Exchange, access: StreamAccess): void {
    const stream = this.hub.admit(clientAddress(x.req), { keyId: access.caller.keyId, expiresAt: access.expiresAt });
    // OFREP's refusals carry no body; EventSource gives up on either, and providers fall back to polling.
    if (typeof stream === 'string') return x.empty(stream === 'full' ? 503 : 429, { 'retry-after': '5' });
    const res = x.startStream(200, SSE_HEADERS);
    if (res === undefined) return this.hub.release(stream);
    const socket = x.req.socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    socket.setTimeout(0);
    this.hub.attach(stream, res);
    this.hub.write(stream, OPENING);
    const lastEventId = x.req.headers['last-event-id'];
    for (const event of this.refetches.replayAfter(typeof lastEventId === 'string' ? lastEventId : undefined)) this.hub.write(stream, event.frame);
  }

  /** The JSON of `[{type: "sse", url, inactivityDelaySec}]` for a bulk answer to `req`, whose key is `caller`'s. */
  streamsJson(req: IncomingMessage, caller: Caller): string {
    const origin = this.originOf(req);
    const token = this.tokens.mint(caller.keyId);
    // Nearly every answer to a key names the same origin and token as the one before it.
    const last = this.lastStreams.get(caller.keyId);
    if (last !== undefined && last.origin === origin && last.token === token) return last.json;
    const url = `${origin}${SSE_PATH}?token=${token}`;
    const json = JSON.stringify([{ type: 'sse', url, inactivityDelaySec: this.options.inactivityDelaySec }]);
    if (this.lastStreams.size > 64) this.lastStreams.clear();
    this.lastStreams.set(caller.keyId, { origin, token, json });
    return json;
  }

  private readonly lastStreams = new Map<string, { origin: string; token: string; json: string }>();

  /**
   * ADR-0008's `flagConfigEtag` / `flagConfigLastModified` (and the earlier `sseEtag` /
   * `sseLastModified`): a re-fetch triggered by an event names the flag set's version it was told
   * of. When that is not the version served here (another replica's event, or one from before a
   * restart), this process cannot vouch that the client's copy is current, so the answer is a full
   * 200 whatever If-None-Match says. Otherwise If-None-Match decides as always (the bulk ETag is a
   * digest of the answer, so a 304 is exact). Values that do not parse are ignored: they are
   * metadata the client echoes.
   */
  allowsNotModified(url: string | undefined): boolean {
    const query = queryOf(url);
    if (query === undefined) return true;
    const etag = query.get('flagConfigEtag') ?? query.get('sseEtag');
    if (etag !== null && etag !== '' && etag !== this.refetches.etag) return false;
    const lastModified = parseLastModified(query.get('flagConfigLastModified') ?? query.get('sseLastModified'));
    return lastModified === undefined || lastModified <= Math.floor(this.refetches.version / 1000);
  }

  close(): void {
    this.unsubscribeKeys();
    this.refetches.close();
    this.hub.close();
  }

  private originOf(req: IncomingMessage): string {
    if (this.options.publicUrl !== '') return this.options.publicUrl;
    const host = req.headers.host;
    const forwarded = this.options.trustProxy > 0 ? req.headers['x-forwarded-proto'] : undefined;
    const scheme = forwarded === 'https' || (req.socket as TLSSocket).encrypted === true ? 'https' : 'http';
    const where = host !== undefined && HOST.test(host) ? host : `${req.socket.localAddress ?? '127.0.0.1'}:${req.socket.localPort ?? 80}`;
    return `${scheme}://${where}`;
  }
}

function queryOf(url: string | undefined): URLSearchParams | undefined {
  if (url === undefined) return undefined;
  const q = url.indexOf('?');
  return q < 0 ? undefined : new URLSearchParams(url.slice(q + 1));
}

/** Unix seconds, or an ISO 8601 / HTTP date, as the ADR allows; undefined when absent or unreadable. */
function parseLastModified(value: string | null): number | undefined {
  if (value === null || value === '') return undefined;
  if (/^[0-9]{1,12}$/.test(value)) return Number(value);
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}
