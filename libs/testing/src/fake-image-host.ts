import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { createTestCa } from './test-certificates';

/** A tiny PNG (1x1, transparent): what the image host serves at /cat.png. */
export const TINY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/**
 * A local HTTPS server standing for the image hosts a client's image URLs name, on loopback, its
 * certificate (for `names`) signed by a CA made for the test: what a fetcher of image URLs meets.
 * Paths: /cat.png (an image), /redirect (302 to the metadata address), /page (HTML), /big (an image
 * announced larger than `bigBytes`), /chunked-big (the same without a length), /slow (never answers).
 * Counts the connections and requests it receives, so a test can tell nothing was sent.
 */
export class FakeImageHost {
  connections = 0;
  readonly requests: string[] = [];

  private constructor(
    private readonly server: Server,
    /** The port it listens on (loopback). */
    readonly port: number,
    /** The CA's certificate (PEM), for the client to trust. */
    readonly ca: string,
    private readonly cleanup: () => void,
  ) {}

  static async start(names: string[], bigBytes = 64 * 1024): Promise<FakeImageHost> {
    const ca = createTestCa('fake image host CA');
    const cert = ca.issueServer('images', names.map((n) => `DNS:${n}`));
    const server = createServer({ cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) }, (req, res) => {
      host.requests.push(req.url ?? '');
      switch (req.url) {
        case '/cat.png':
          res.writeHead(200, { 'content-type': 'image/png', 'content-length': TINY_PNG.length }).end(TINY_PNG);
          return;
        case '/redirect':
          res.writeHead(302, { location: 'https://169.254.169.254/latest/meta-data/' }).end();
          return;
        case '/page':
          res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>not an image</h1>');
          return;
        case '/big':
          res.writeHead(200, { 'content-type': 'image/png', 'content-length': bigBytes + 1 });
          res.end(Buffer.alloc(bigBytes + 1));
          return;
        case '/chunked-big':
          res.writeHead(200, { 'content-type': 'image/png' });
          res.end(Buffer.alloc(bigBytes + 1));
          return;
        case '/slow':
          return; // never answered; the server's close destroys it
        default:
          res.writeHead(404).end();
      }
    });
    server.on('secureConnection', (socket: TLSSocket) => {
      host.connections++;
      socket.on('error', () => undefined);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const host: FakeImageHost = new FakeImageHost(server, (server.address() as AddressInfo).port, readFileSync(ca.certFile, 'utf8'), () => ca.remove());
    return host;
  }

  /** An https URL of this host under `name` (which the test's resolver maps to loopback). */
  url(name: string, path: string): string {
    return `https://${name}:${this.port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    this.cleanup();
  }
}
