import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'node:http';
import type { Response } from 'express';
import express from 'express';
import { sendAttachment } from './attachment';

/** A real socket between sendAttachment and a client that reads as slowly as a test likes. */
describe('sendAttachment (real sockets)', () => {
  let server: Server;
  let url: string;
  let body: () => AsyncIterable<string>;

  beforeAll(async () => {
    const app = express();
    app.get('/file', (_req, res: Response) => void sendAttachment(res, { contentType: 'text/csv; charset=utf-8', filename: 'f.csv', body: body() }));
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/file`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const CHUNK = 'x'.repeat(64 * 1024);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('asks for the next chunk only as the client reads, and stops asking when the client leaves', async () => {
    let pulled = 0;
    let ended = false;
    body = async function* () {
      try {
        for (;;) {
          pulled++;
          yield CHUNK;
        }
      } finally {
        ended = true;
      }
    };
    const req = request(url);
    const res = await new Promise<import('node:http').IncomingMessage>((resolve) => req.on('response', resolve).end());
    expect(res.headers['content-disposition']).toBe('attachment; filename="f.csv"');
    res.pause();
    await sleep(300);
    // An endless body, a client that reads nothing: only what the socket buffers took was asked for.
    const stalled = pulled;
    await sleep(300);
    expect(pulled).toBe(stalled);
    expect(stalled * CHUNK.length).toBeLessThan(16 * 1024 * 1024);
    // Reading resumes the pulls.
    res.resume();
    await sleep(100);
    expect(pulled).toBeGreaterThan(stalled);
    res.destroy();
    req.destroy();
    await sleep(200);
    expect(ended).toBe(true);
    const after = pulled;
    await sleep(100);
    expect(pulled).toBe(after);
  });

  it('breaks the connection when the body fails after the headers, so the download is never taken as whole', async () => {
    body = async function* () {
      yield 'id\r\n1\r\n';
      await sleep(20);
      throw new Error('the database went away');
    };
    const res = await fetch(url);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });
});
