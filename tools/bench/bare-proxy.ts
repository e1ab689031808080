/**
 * The floor of the gateway benchmark (`BENCH_CASES=...,floor`): the least a metering gateway written
 * for Node does with a chat completion, and nothing else. node:http takes the request, its body is read
 * and parsed (a gateway must read the model and max_tokens), it goes to the upstream on an undici Pool
 * (as our providers do), and the upstream's answer is read and parsed (a gateway must read its usage)
 * and sent back. No authentication, no rate limit, no ledger, no logging, no metrics.
 *
 * Its CPU per request is what Node itself costs per proxied request on this machine, so it says how
 * far below its own figure the gateway's CPU can go without leaving Node.
 *
 *   BARE_PROXY_PORT=N BARE_PROXY_UPSTREAM=http://127.0.0.1:M/v1 node -r ts-node/register/transpile-only tools/bench/bare-proxy.ts
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';

const port = Number(process.env['BARE_PROXY_PORT']);
const upstream = new URL(process.env['BARE_PROXY_UPSTREAM'] ?? '');
const pool = new Pool(upstream.origin, { connections: 64 });
const path = `${upstream.pathname.replace(/\/$/, '')}/chat/completions`;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model?: unknown };
        if (typeof body.model !== 'string') throw new Error('no model');
        const answer = await pool.request({
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' },
          body: JSON.stringify(body),
        });
        const parsed = (await answer.body.json()) as { usage?: { total_tokens?: number } };
        if (typeof parsed.usage?.total_tokens !== 'number') throw new Error('no usage');
        const out = JSON.stringify(parsed);
        res.writeHead(answer.statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
        res.end(out);
      } catch (err) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(err));
      }
    })();
  });
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  void pool.close();
  server.closeAllConnections();
});
