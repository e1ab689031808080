import { once } from 'node:events';
import { createServer, type Server, type Socket, connect } from 'node:net';

/**
 * A TCP proxy on loopback between an app and a server (Postgres, Redis) that a test can cut and
 * restore, to make a real outage without touching the shared server. `cut()` closes every open
 * connection and stops listening, so new connections are refused (ECONNREFUSED, as when the
 * server is stopped); `stall()` keeps every connection open but carries nothing either way and
 * accepts new ones that never answer (a network partition: only timeouts end the wait);
 * `restore()` drops what was stalled and forwards again on the same port.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private stalled = false;
  /** Connections accepted since the start, for tests that want to see traffic went through. */
  connections = 0;
  /** Bytes the clients sent towards the server since the start: how much a request asked of it. */
  bytesToServer = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
    private listenPort: number,
  ) {}

  /** Starts a proxy to `target` (a URL such as `postgres://host:5432/db`, or `host:port`). */
  static async start(target: string): Promise<TcpProxy> {
    const url = new URL(target.includes('://') ? target : `tcp://${target}`);
    const proxy = new TcpProxy(url.hostname, Number(url.port), 0);
    await proxy.restore();
    return proxy;
  }

  get port(): number {
    return this.listenPort;
  }

  /** `url` with its host and port replaced by the proxy's, e.g. DATABASE_URL through the proxy. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.listenPort);
    return u.toString();
  }

  get isUp(): boolean {
    return this.server !== undefined;
  }

  async restore(): Promise<void> {
    if (this.stalled) {
      this.stalled = false;
      this.dropAll();
    }
    if (this.server) return;
    const server = createServer((client) => this.pipe(client));
    server.listen(this.listenPort, '127.0.0.1');
    await once(server, 'listening');
    this.listenPort = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** Drops every connection (both sides) and refuses new ones until `restore()`. */
  async cut(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.stalled = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    this.dropAll();
    await closed;
  }

  /** Open connections stop carrying data; new ones are accepted and never answered. */
  stall(): void {
    this.stalled = true;
    for (const s of this.sockets) {
      s.unpipe();
      s.pause();
    }
  }

  private dropAll(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  async stop(): Promise<void> {
    await this.cut();
  }

  private pipe(client: Socket): void {
    this.connections++;
    if (this.stalled) {
      this.sockets.add(client);
      client.on('error', () => undefined);
      client.on('close', () => this.sockets.delete(client));
      client.pause();
      return;
    }
    const upstream = connect(this.targetPort, this.targetHost);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.setNoDelay(true);
      // Either side failing ends both: the app must see the connection drop.
      s.on('error', () => undefined);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => (this.bytesToServer += chunk.length));
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
