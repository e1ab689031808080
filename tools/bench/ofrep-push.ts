/**
 * OFREP push at scale: one built orep-server process (Postgres mode) holding N SSE connections from
 * this process over loopback, its memory per connection, and a flag PATCH through management-api
 * (in this process, on its own database and Redis prefix) reaching the listening clients: the time
 * from the PATCH's answer to each client's `refetchEvaluation` event. Baseline, same run: a bare
 * node:http server holding the same N streams and writing one frame to them all when asked.
 *
 *   npx nx run orep-server:build
 *   TS_NODE_PROJECT=tsconfig.json node -r ts-node/register/transpile-only -r tsconfig-paths/register \
 *     tools/bench/ofrep-push.ts [connections=10000] [listeners=1000] [patches=5]
 *
 * Every connection receives every event; the latency is read on `listeners` of them, opened last
 * (so they are written to last by a server that writes in connection order). An event that arrives before the PATCH's answer (management-api publishes on Redis
 * before it answers) counts as 0 ms. Needs `ulimit -n` above connections + a few hundred.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { freePort, http, waitFor } from '@flagship/testing';
// A bench runs management-api's own test fixture in process: the app's module, not a lib.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { ManagementApiFixture } from '../../apps/management-api/src/testing/management-api.fixture';

const N = Number(process.argv[2] ?? 10000);
const LISTENERS = Math.min(N, Number(process.argv[3] ?? 1000));
const PATCHES = Number(process.argv[4] ?? 5);
const TOKEN = 'bench-push-token';
const main = join(__dirname, '..', '..', 'dist/apps/orep-server/apps/orep-server/src/main.js');

const rssOf = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** A listening client on a raw socket: notes when a chunk holds an event. */
class Stream {
  lastEventAt = 0;
  events = 0;
  private constructor(readonly socket: Socket) {}

  static open(port: number, path: string): Promise<Stream> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const s = new Stream(socket);
      let head = '';
      socket.once('error', reject);
      socket.on('data', (chunk: Buffer) => {
        if (head !== 'done') {
          head += chunk.toString('latin1');
          if (!head.includes('\r\n\r\n')) return;
          if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(head.split('\r\n')[0]));
          head = 'done';
          resolve(s);
          return;
        }
        if (chunk.includes('refetchEvaluation')) {
          s.lastEventAt = performance.now();
          s.events++;
        }
      });
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
    });
  }
}

/**
 * The streams that are only held open (N - listeners) live in a child process of their own, which
 * reads and discards what they get, so this process reads only the listeners' sockets: otherwise
 * the bench's own reading of N sockets per event would be most of what it measures.
 */
const HOLDERS = `
const net = require('node:net');
const [port, path, count] = [Number(process.env.PORT), process.env.STREAM_PATH, Number(process.env.COUNT)];
const sockets = [];
const open = () => new Promise((resolve, reject) => {
  const s = net.connect(port, '127.0.0.1', () => s.write('GET ' + path + ' HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAccept: text/event-stream\\r\\n\\r\\n'));
  s.once('error', reject);
  s.once('data', (c) => (c.toString('latin1').startsWith('HTTP/1.1 200') ? resolve() : reject(new Error(c.toString('latin1').split('\\r\\n')[0]))));
  s.on('data', () => {});
  sockets.push(s);
});
(async () => {
  for (let i = 0; i < count; i += 250) await Promise.all(Array.from({ length: Math.min(250, count - i) }, open));
  process.send('ready');
})().catch((e) => { console.error(e); process.exit(1); });
process.on('message', () => { process.send(sockets.filter((s) => s.readyState === 'open').length); });
`;

async function openAll(port: number, path: string): Promise<{ listeners: Stream[]; holders: ChildProcess }> {
  const holders = spawn(process.execPath, ['-e', HOLDERS], {
    env: { ...process.env, PORT: String(port), STREAM_PATH: path, COUNT: String(N - LISTENERS) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [ready] = (await once(holders, 'message')) as [string];
  if (ready !== 'ready') throw new Error('holders');
  const listeners: Stream[] = [];
  for (let i = 0; i < LISTENERS; i += 250) {
    listeners.push(...(await Promise.all(Array.from({ length: Math.min(250, LISTENERS - i) }, () => Stream.open(port, path)))));
  }
  return { listeners, holders };
}

/** How many of the held streams are still open. */
async function heldOpen(holders: ChildProcess): Promise<number> {
  holders.send('count');
  const [n] = (await once(holders, 'message')) as [number];
  return n;
}

/** Latencies (ms) from `answeredAt` to each listener's event after `before` events. */
async function latencies(listeners: Stream[], before: number[], answeredAt: number): Promise<number[]> {
  await waitFor(async () => listeners.every((s, i) => s.events > before[i]!), 5000, 5).catch(() => undefined);
  return listeners.map((s, i) => (s.events > before[i]! ? Math.max(0, s.lastEventAt - answeredAt) : Infinity));
}

const report = (label: string, lat: number[]) =>
  console.log(
    `${label}: ${lat.length} events, p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${Math.max(...lat).toFixed(1)} ms, within 1 s ${lat.filter((l) => l <= 1000).length}/${lat.length}`,
  );

const BARE = `
const http = require('node:http');
const streams = new Set();
http.createServer((req, res) => {
  if (req.url === '/fire') {
    const frame = Buffer.from('id: ' + Date.now() + '\\nevent: message\\ndata: {"type":"refetchEvaluation"}\\n\\n');
    for (const s of streams) s.write(frame);
    return res.end('ok');
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write('retry: 2000\\n\\n');
  streams.add(res);
  res.on('close', () => streams.delete(res));
}).listen(Number(process.env.PORT), '127.0.0.1', () => process.send('ready'));
`;

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

async function bare(): Promise<{ perConn: number; lat: number[] }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', BARE], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await once(child, 'message');
  await new Promise((r) => setTimeout(r, 500));
  const before = rssOf(child.pid!);
  const { listeners, holders } = await openAll(port, '/');
  await new Promise((r) => setTimeout(r, 2000));
  const perConn = (rssOf(child.pid!) - before) / N;
  const lat: number[] = [];
  for (let i = 0; i < PATCHES; i++) {
    const counts = listeners.map((s) => s.events);
    const res = await http(`http://127.0.0.1:${port}/fire`);
    if (res.status !== 200) throw new Error('fire');
    lat.push(...(await latencies(listeners, counts, performance.now())));
    await new Promise((r) => setTimeout(r, 200));
  }
  for (const s of listeners) s.socket.destroy();
  await stop(holders);
  await stop(child);
  return { perConn, lat };
}

async function orep(): Promise<{ perConn: number; heapPerConn: number; lat: number[]; patchMs: number[] }> {
  const f = await ManagementApiFixture.start({ LOG_LEVEL: 'warn' });
  let child: ChildProcess | undefined;
  try {
    const owner = await f.signUp();
    const as = { token: owner.idToken, tenant: owner.tenantId };
    const created = await f.call('POST', '/api/flags', { ...as, json: { key: 'pushed', name: 'Pushed', type: 'boolean', defaultValue: false } });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`);
    const port = await freePort();
    const metricsPort = await freePort();
    child = spawn(process.execPath, [main], {
      env: {
        ...f.te.env,
        // Not 'test', which leaves out the process metrics (heap) read below.
        NODE_ENV: 'development',
        LOG_LEVEL: 'warn',
        OREP_AUTH_TOKEN: TOKEN,
        OREP_TENANT_ID: owner.tenantId,
        OREP_PORT: String(port),
        METRICS_PORT: String(metricsPort),
        OREP_SSE_MAX_CONNECTIONS: String(N + 100),
        OREP_SSE_MAX_PER_ADDRESS: '0',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const metricsUrl = `http://127.0.0.1:${metricsPort}`;
    await waitFor(async () => (await http(`${metricsUrl}/readyz`).catch(() => ({ status: 0, body: {} as any }))).body?.details?.snapshot?.subscriber === 'ready', 30000, 100);
    const bulk = await http(`http://127.0.0.1:${port}/ofrep/v1/evaluate/flags`, { method: 'POST', json: { context: { targetingKey: 'u' } }, headers: { authorization: `Bearer ${TOKEN}` } });
    const url = new URL((bulk.body as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url);
    const heap = async () => Number(/^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)$/m.exec((await http(`${metricsUrl}/metrics`)).text)![1]);
    await new Promise((r) => setTimeout(r, 500));
    const [rss0, heap0] = [rssOf(child.pid!), await heap()];
    const { listeners, holders } = await openAll(port, `${url.pathname}${url.search}`);
    await new Promise((r) => setTimeout(r, 2000));
    const [rss1, heap1] = [rssOf(child.pid!), await heap()];
    console.log(`orep-server: ${N} streams open; RSS ${mb(rss0)} -> ${mb(rss1)}, heap used ${mb(heap0)} -> ${mb(heap1)}`);
    const lat: number[] = [];
    const patchMs: number[] = [];
    for (let i = 0; i < PATCHES; i++) {
      const counts = listeners.map((s) => s.events);
      const started = performance.now();
      const patched = await f.call('PATCH', '/api/flags/pushed', { ...as, json: { enabled: i % 2 === 0 } });
      const answeredAt = performance.now();
      if (patched.status !== 200) throw new Error(`PATCH: ${patched.status}`);
      patchMs.push(answeredAt - started);
      lat.push(...(await latencies(listeners, counts, answeredAt)));
      await new Promise((r) => setTimeout(r, 300));
    }
    const held = await heldOpen(holders);
    const open = listeners.filter((s) => s.socket.readyState === 'open').length;
    console.log(`after the changes: ${held + open}/${N} streams still open, ${listeners.filter((s) => s.events >= PATCHES).length} of the ${LISTENERS} listeners got all ${PATCHES} events`);
    for (const s of listeners) s.socket.destroy();
    await stop(holders);
    return { perConn: (rss1 - rss0) / N, heapPerConn: (heap1 - heap0) / N, lat, patchMs };
  } finally {
    if (child) await stop(child);
    await f.stop();
  }
}

async function run(): Promise<void> {
  console.log(`${N} connections, latency read on ${LISTENERS}, ${PATCHES} changes each`);
  const b = await bare();
  report('bare node:http (baseline): /fire answered -> event', b.lat);
  console.log(`bare node:http: ${(b.perConn / 1024).toFixed(1)} KB RSS per connection`);
  const o = await orep();
  report('orep-server: PATCH answered -> refetchEvaluation', o.lat);
  console.log(`PATCH itself: p50 ${pct(o.patchMs, 50).toFixed(1)} ms`);
  console.log(
    `orep-server: ${(o.perConn / 1024).toFixed(1)} KB RSS and ${(o.heapPerConn / 1024).toFixed(1)} KB heap per connection (${(o.perConn / b.perConn).toFixed(2)}x the baseline's RSS); p99 ${(pct(o.lat, 99) / Math.max(0.1, pct(b.lat, 99))).toFixed(2)}x the baseline's`,
  );
}

run().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
