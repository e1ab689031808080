import type { IncomingMessage } from 'node:http';
import { isIPv4, isIPv6 } from 'node:net';

/** Where the platform notes, on each request, how many proxy hops its app trusts (see trustProxyHops). */
const TRUSTED_HOPS = Symbol('flagship.trustedProxyHops');

type Marked = IncomingMessage & { [TRUSTED_HOPS]?: number };

/** Records the app's TRUST_PROXY on a request; the app's first request listener does it (bootstrapService). */
export function markTrustedHops(req: IncomingMessage, hops: number): void {
  (req as Marked)[TRUSTED_HOPS] = hops;
}

/**
 * The client's address: the socket's peer, or, when the app trusts `hops` proxies, the address
 * that many steps from the right of X-Forwarded-For (fewer when the header holds fewer). Exactly
 * Express's `trust proxy` with a number (proxy-addr): addresses are [peer, ...forwarded from right
 * to left] and the answer is the first one not trusted, index `hops` at most. The one place every
 * route, Express or lean-http, reads the client address from.
 */
export function clientAddress(req: IncomingMessage, hops = (req as Marked)[TRUSTED_HOPS] ?? 0): string {
  const peer = req.socket?.remoteAddress ?? 'unknown';
  if (hops <= 0) return peer;
  const header = req.headers['x-forwarded-for'];
  if (header === undefined || header === '') return peer;
  const forwarded = (Array.isArray(header) ? header.join(',') : header)
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  // The last entry was added by the proxy next to us, the first by the farthest (or the client).
  return forwarded[forwarded.length - Math.min(hops, forwarded.length)] ?? peer;
}

/**
 * The network a client address counts under when bounding what one client may hold: an IPv4
 * address itself (an IPv4-mapped IPv6 address is its IPv4 address), an IPv6 address its /64, since
 * one subscriber is commonly given a whole /64 and could otherwise take a fresh address per
 * connection. Anything else (no address known) is counted as it is.
 */
export function addressBucket(address: string): string {
  const bare = address.replace(/%.*$/, '');
  if (isIPv4(bare)) return bare;
  if (!isIPv6(bare)) return address.slice(0, 100);
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(bare);
  if (mapped !== null && isIPv4(mapped[1]!)) return mapped[1]!;
  return `${ipv6Groups(bare).slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted quad as two groups). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const quad = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const gap = text.indexOf('::');
  if (gap < 0) return parse(text);
  const head = parse(text.slice(0, gap));
  const tail = parse(text.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}
