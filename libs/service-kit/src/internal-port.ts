import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Marks a request that arrived on the internal port (see startInternalListener). */
const INTERNAL = Symbol('flagship.internalPort');

/** The only paths the internal port answers; they are handed to the app's own routes. */
export const INTERNAL_PATHS: ReadonlySet<string> = new Set(['/metrics', '/readyz', '/healthz']);

/**
 * Whether a request came in on the internal port (METRICS_PORT), which the ingress never routes:
 * only there are /metrics and the detailed /readyz served. A symbol on the request object, so no
 * header a caller sends can claim it.
 */
export function isInternalRequest(req: IncomingMessage): boolean {
  return (req as IncomingMessage & { [INTERNAL]?: true })[INTERNAL] === true;
}

const internalServers = new WeakMap<object, Server>();

/**
 * A second node:http listener, on `port`, for Prometheus and operators: GET /metrics, /readyz and
 * /healthz are marked internal and handed to the public server's own request listener (so each app
 * answers them as it always did, fast paths included); anything else is 404. It closes when the
 * public server does.
 */
export async function startInternalListener(owner: object, publicServer: Server, port: number, host: string): Promise<Server> {
  const internal = createServer((req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const listener = publicServer.listeners('request')[0] as RequestListener | undefined;
    if (req.method !== 'GET' || !INTERNAL_PATHS.has(path) || listener === undefined) {
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: the internal port serves GET /metrics, /readyz and /healthz\n');
      return;
    }
    (req as IncomingMessage & { [INTERNAL]?: true })[INTERNAL] = true;
    listener(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    internal.once('error', reject);
    internal.listen(port, host, () => {
      internal.off('error', reject);
      resolve();
    });
  });
  publicServer.once('close', () => {
    internal.close();
    internal.closeAllConnections();
  });
  internalServers.set(owner, internal);
  return internal;
}

/** `http://127.0.0.1:PORT` of an app's internal listener, or undefined when it has none. */
export function internalUrlOf(owner: object): string | undefined {
  const server = internalServers.get(owner);
  const address = server?.address() as AddressInfo | null | undefined;
  return address ? `http://127.0.0.1:${address.port}` : undefined;
}
