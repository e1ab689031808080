import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { waitFor } from '@flagship/testing';
import { SseHub } from './sse-hub';

/**
 * The hub's write bound on real sockets: a client that sends its request and never reads. Heartbeat
 * and event bytes first fill the kernel's buffers on both ends, then the process's own queue,
 * which must stay under maxBufferedBytes: the stream is closed instead.
 */
describe('SseHub and a client that does not read', () => {
  let server: Server;
  let hub: SseHub;
  let streams: ServerResponse[];
  let socket: Socket;

  const start = async (maxBufferedBytes: number) => {
    hub = new SseHub({ maxConnections: 10, maxPerAddress: 0, maxBufferedBytes, heartbeatMs: 60_000 });
    streams = [];
    server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      hub.add(res, req.socket.remoteAddress ?? '', { keyId: 'server' });
      streams.push(res);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(socket, 'connect');
    socket.pause();
    socket.on('error', () => undefined);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(async () => hub.size === 1, 2000, 5);
  };

  afterEach(async () => {
    socket.destroy();
    hub.close();
    server.closeAllConnections();
    server.close();
  });

  /** Broadcasts 1 KiB events until the stream is closed or `bytes` were sent; the bytes queued in the process at the end. */
  const flood = async (bytes: number): Promise<number> => {
    const frame = Buffer.from(`data: ${'x'.repeat(1018)}\n\n`);
    for (let sent = 0, i = 1; sent < bytes && !streams[0]!.destroyed; sent += frame.length, i++) {
      hub.broadcast(frame);
      // Let the socket flush what the kernel takes, as between real events.
      if (i % 256 === 0) await new Promise((r) => setImmediate(r));
    }
    return streams[0]!.writableLength;
  };

  it('is closed once its queue passes the bound', async () => {
    await start(64 * 1024);
    await flood(64 * 1024 * 1024);
    await waitFor(async () => hub.size === 0, 2000, 5);
    expect(hub.slowClosed).toBe(1);
    expect(streams[0]!.destroyed).toBe(true);
  });

  it('(the same client, with no bound worth the name, is buffered for without end)', async () => {
    await start(Number.MAX_SAFE_INTEGER);
    const queued = await flood(16 * 1024 * 1024);
    expect(hub.size).toBe(1);
    expect(queued).toBeGreaterThan(8 * 1024 * 1024);
  });
});
