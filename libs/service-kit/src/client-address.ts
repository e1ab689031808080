import type { IncomingMessage } from 'node:http';

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
