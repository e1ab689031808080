import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'node:http';
import type { Response } from 'express';
import express from 'express';
import { waitFor } from '@flagship/testing';
import { sendAttachment } from './attachment';

/** A real socket between sendAttachment and a client that reads as slowly as a test likes. */
describe('sendAttachment (real sockets)', () => {
  let server: Server;
  let url: string;
  let body: () => AsyncIterable<string>;
  let idleMs: number | undefined;

  beforeAll(async () => {
    const app = express();
    app.get('/file', (_req, res: Response) => void sendAttachment(res, { contentType: 'text/csv; charset=utf-8', filename: 'f.csv', body: body() }, { idleMs }));
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/file`;
  });
  // A test that fails mid-download leaves a stalled socket open, and close() waits for every socket:
  // cut them, so one failed assert is not also a hook timeout.
  afterEach(() => {
    server.closeAllConnections();
    idleMs = undefined;
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
    // An endless body, a client that reads nothing: the pulls stop once the socket buffers are full
    // (how soon depends on the machine's load, so wait for them to settle, then watch a long window).
    let seen = -1;
    const stalled = await waitFor(async () => {
      const settled = pulled === seen && pulled;
      seen = pulled;
      return settled;
    }, 10_000, 500);
    await sleep(1000);
    expect(pulled).toBe(stalled);
    // Only what the socket buffers took was asked for.
    expect(stalled * CHUNK.length).toBeLessThan(16 * 1024 * 1024);
    // Reading resumes the pulls.
    res.resume();
    await waitFor(async () => pulled > stalled);
    res.destroy();
    req.destroy();
    await waitFor(async () => ended);
    const after = pulled;
    await sleep(500);
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

  it('closes a download whose client reads nothing for idleMs, which ends the reads', async () => {
    idleMs = 500;
    let ended = false;
    body = async function* () {
      try {
        for (;;) yield CHUNK;
      } finally {
        ended = true;
      }
    };
    const req = request(url);
    const res = await new Promise<import('node:http').IncomingMessage>((resolve) => req.on('response', resolve).end());
    res.pause();
    await waitFor(async () => ended);
  });

  it("does not take the time the body needs for its next chunk (a slow database page) as the client's idleness", async () => {
    idleMs = 500;
    body = async function* () {
      yield 'id\r\n';
      await sleep(2000);
      yield '1\r\n';
    };
    const res = await fetch(url);
    expect(await res.text()).toBe('id\r\n1\r\n');
  });
});
