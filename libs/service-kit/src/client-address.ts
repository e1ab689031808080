import type { IncomingMessage } from 'node:http';
import { isIPv6 } from 'node:net';

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
 * What a per-address limit counts a client address as: an IPv4 address as it is, an IPv6 address
 * as its /64 (`2001:db8:1:2::/64`). One subscriber holds a whole /64 (a home, a phone, a VM), and its
 * privacy addresses rotate within it, so counting IPv6 per address would give one household 2^64
 * allowances. IPv4 written in IPv6 (`::ffff:203.0.113.7`, a dual-stack socket's form, and the NAT64
 * prefix 64:ff9b::/96) counts as the IPv4 address it carries. Anything else is returned as it is,
 * cut to 100 characters (it is a key of a count).
 */
export function addressBucket(address: string): string {
  if (!address.includes(':')) return address.slice(0, 100);
  const hextets = ipv6Hextets(address);
  if (hextets === undefined) return address.slice(0, 100);
  const [a, b, c, d, e, f, g, h] = hextets as [number, number, number, number, number, number, number, number];
  const zeros80 = a === 0 && b === 0 && c === 0 && d === 0 && e === 0;
  if ((zeros80 && f === 0xffff) || (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0)) {
    return `${g >> 8}.${g & 0xff}.${h >> 8}.${h & 0xff}`;
  }
  return `${[a, b, c, d].map((x) => x.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address (zone index dropped, an IPv4 tail read); undefined when it is none. */
function ipv6Hextets(text: string): number[] | undefined {
  let address = text;
  const zone = address.indexOf('%');
  if (zone >= 0) address = address.slice(0, zone);
  if (!isIPv6(address)) return undefined;
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (tail !== null) {
    const [, p, q, r, s] = tail.map(Number) as [number, number, number, number, number];
    address = `${address.slice(0, tail.index)}${((p << 8) | q).toString(16)}:${((r << 8) | s).toString(16)}`;
  }
  const [head, rest] = address.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((x) => parseInt(x, 16));
}
