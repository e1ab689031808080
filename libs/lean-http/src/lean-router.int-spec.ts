import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { Logger } from '@nestjs/common';
import { http } from '@flagship/testing';
import { BufferedMetrics } from './buffered-metrics';
import { type ErrorWriter, JSON_TYPE } from './exchange';
import { installLeanRouter, LeanRouter } from './lean-router';

/** The router on a real node:http server (loopback), with a plain listener as the fallback, as Express is in an app. */
describe('LeanRouter', () => {
  let server: Server;
  let url: string;
  const observed: Array<[string, string, number]> = [];

  const custom: ErrorWriter = (x, error, headers) =>
    x.send(error.status, JSON_TYPE, headers, JSON.stringify({ error: { code: error.code, message: error.message } }));

  beforeAll(async () => {
    Logger.overrideLogger(false); // the deliberate failure below is logged; keep the output clean
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('fallback');
    });
    const metrics = new BufferedMetrics({ observe: (method, route, status) => observed.push([method, route, status]) }, 1);
    installLeanRouter(server, (fallback) =>
      new LeanRouter({ metrics, fallback, bodyLimit: 64, name: 'test' })
        .add({
          path: '/items/:id/echo',
          method: 'POST',
          run: (x, id, text) => x.json(200, JSON.stringify({ id, text })),
        })
        .add({ path: '/guarded', method: 'GET', guard: (x) => (x.req.headers['x-ok'] === '1' ? true : (x.empty(401), false)), run: (x) => x.json(200, '{"ok":true}') })
        .add({
          path: '/verified',
          method: 'POST',
          // Decides later, as a token verification does.
          guard: async (x) => {
            await new Promise((r) => setTimeout(r, 5));
            if (x.req.headers['x-boom'] === '1') throw new Error('guard boom');
            if (x.req.headers['x-ok'] === '1') return true;
            x.empty(401);
            return false;
          },
          run: (x, _p, text) => x.json(200, JSON.stringify({ text })),
        })
        .add({ path: '/boom', method: 'GET', run: () => Promise.reject(new Error('boom')) })
        .add({ path: '/now', method: 'GET', otherMethods: 'fallback', schedule: 'now', run: (x) => x.json(200, '{"now":true}') }),
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('routes a parameter segment, decoded, with the body, and counts it under the template', async () => {
    const res = await http(`${url}/items/a%20b/echo?x=1`, { method: 'POST', json: { n: 1 } });
    expect([res.status, res.body]).toEqual([200, { id: 'a b', text: '{"n":1}' }]);
    expect(res.headers.get('x-request-id')).toEqual(expect.any(String));
    await new Promise((r) => setTimeout(r, 20));
    expect(observed).toContainEqual(['POST', '/items/:id/echo', 200]);
  });

  it('decodes gzip, deflate and br bodies as Express does, the limit on the decoded bytes; refuses other codings (415) and corrupt data (400)', async () => {
    const text = '{"n":1}';
    const send = (body: Buffer, coding: string) =>
      http(`${url}/items/1/echo`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'content-encoding': coding } });
    for (const [coding, encode] of [['gzip', gzipSync], ['deflate', deflateSync], ['br', brotliCompressSync], ['GZIP', gzipSync]] as const) {
      const res = await send(encode(Buffer.from(text)), coding);
      expect([coding, res.status, res.body]).toEqual([coding, 200, { id: '1', text }]);
    }
    // 7 compressed bytes per 100 decoded: only the decoded size can tell it is over the limit (64 here).
    const bomb = await send(gzipSync(Buffer.from(JSON.stringify({ pad: 'x'.repeat(10_000) }))), 'gzip');
    expect([bomb.status, bomb.body.type]).toEqual([413, '/problems/payload-too-large']);
    const other = await send(Buffer.from(text), 'compress');
    expect([other.status, other.body.type, other.headers.get('accept-encoding')]).toEqual([415, '/problems/unsupported-media-type', 'gzip, deflate, br']);
    const corrupt = await send(Buffer.from(text), 'gzip');
    expect([corrupt.status, corrupt.body.type]).toEqual([400, '/problems/bad-request']);
  });

  it('refuses wrong methods, bodies too large and non-JSON bodies in problem+json by default', async () => {
    const get = await http(`${url}/items/1/echo`);
    expect([get.status, get.headers.get('allow'), get.headers.get('content-type'), get.body.type]).toEqual([405, 'POST', 'application/problem+json', '/problems/method-not-allowed']);
    const big = await http(`${url}/items/1/echo`, { method: 'POST', json: { pad: 'x'.repeat(100) } });
    expect([big.status, big.body.type]).toEqual([413, '/problems/payload-too-large']);
    const form = await http(`${url}/items/1/echo`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect([form.status, form.body.type, form.headers.get('accept')]).toEqual([415, '/problems/unsupported-media-type', 'application/json']);
  });

  it('guards before reading the body; an unexpected failure is a 500 that tells nothing', async () => {
    expect((await http(`${url}/guarded`)).status).toBe(401);
    expect((await http(`${url}/guarded`, { headers: { 'x-ok': '1' } })).body).toEqual({ ok: true });
    const boom = await http(`${url}/boom`);
    expect([boom.status, boom.body.type]).toEqual([500, '/problems/internal-error']);
    expect(boom.text).not.toContain('boom');
  });

  it('a guard that decides later answers before the body is read: a refusal comes while the body is still being sent', async () => {
    /** Headers and the start of a body that never ends (Content-Length promises more): the status, once one comes. */
    const unfinished = (headers: Record<string, string>) => {
      const req = request(`${url}/verified`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '60', ...headers } });
      const status = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
      });
      req.write('{"pad":"');
      return { status, req };
    };
    const refused = unfinished({});
    expect(await refused.status).toBe(401);
    refused.req.destroy();
    const failing = unfinished({ 'x-boom': '1' });
    expect(await failing.status).toBe(500);
    failing.req.destroy();
    // Let through, the body is read as usual.
    expect((await http(`${url}/verified`, { method: 'POST', json: { n: 1 }, headers: { 'x-ok': '1' } })).body).toEqual({ text: '{"n":1}' });
  });

  it('hands everything else to the fallback listener', async () => {
    expect((await http(`${url}/elsewhere`)).text).toBe('fallback');
    expect((await http(`${url}/items//echo`, { method: 'POST', json: {} })).text).toBe('fallback');
    expect((await http(`${url}/items/a/b/echo`, { method: 'POST', json: {} })).text).toBe('fallback');
    expect((await http(`${url}/now`, { method: 'DELETE' })).text).toBe('fallback');
    expect((await http(`${url}/now`)).body).toEqual({ now: true });
  });

  it('answers owned prefixes itself, in the app error format it was given', async () => {
    const own = createServer((_req, res) => res.end('fallback'));
    const metrics = new BufferedMetrics({ observe: () => undefined });
    installLeanRouter(own, (fallback) => new LeanRouter({ metrics, fallback, bodyLimit: 64, errors: custom, ownedPrefixes: ['/v1/'] }).add({ path: '/v1/x', method: 'POST', run: (x) => x.json(200, '{}') }));
    own.listen(0, '127.0.0.1');
    await once(own, 'listening');
    const base = `http://127.0.0.1:${(own.address() as { port: number }).port}`;
    try {
      expect((await http(`${base}/v1/nope`)).body).toEqual({ error: { code: 'not-found', message: 'No route GET /v1/nope.' } });
      expect((await http(`${base}/v1/x`)).body).toEqual({ error: { code: 'method-not-allowed', message: '/v1/x answers POST only.' } });
      expect((await http(`${base}/v2/x`)).text).toBe('fallback');
    } finally {
      metrics.close();
      await new Promise<void>((r) => own.close(() => r()));
    }
  });

  it('refuses to take over a server that has no single request listener', () => {
    const bare = createServer();
    expect(() => installLeanRouter(bare, () => new LeanRouter({ metrics: new BufferedMetrics({ observe: () => undefined }), fallback: () => undefined, bodyLimit: 1 }))).toThrow(
      /one request listener/,
    );
  });
});
