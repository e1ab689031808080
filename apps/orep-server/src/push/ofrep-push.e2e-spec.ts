/**
 * OFREP push through the built orep-server started as a process (file mode), as users run it: a
 * flag file edited while LaunchDarkly's Node EventSource and a page in Chromium hold the stream
 * open with the URL the bulk answer gave them, then SIGTERM with the streams still open. The
 * process's whole output (LOG_LEVEL=trace) must never hold the URL token. Needs the build first:
 * `npx nx run orep-server:build`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { FlagDefinition } from '@flagship/flag-evaluation';
import { freePort, http, waitFor } from '@flagship/testing';

interface LdEventSource {
  addEventListener(type: 'message', listener: (event: { data: string; lastEventId: string }) => void): void;
  addEventListener(type: 'open', listener: () => void): void;
  addEventListener(type: 'error', listener: (event: { message?: string }) => void): void;
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { EventSource } = require('launchdarkly-eventsource') as { EventSource: new (url: string, options?: { agent?: Agent }) => LdEventSource };

const root = join(__dirname, '..', '..', '..', '..');
const main = join(root, 'dist/apps/orep-server/apps/orep-server/src/main.js');
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const TOKEN = 'e2e-push-token';

const flag = (value: string): FlagDefinition => ({
  key: 'greeting',
  type: 'string',
  defaultValue: value,
  variations: [{ id: 'v', name: 'V', value, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
});

jest.setTimeout(60000);

describe('OFREP push, built app', () => {
  let dir: string;
  let file: string;
  let child: ChildProcess;
  let out = '';
  let url: string;
  let pageServer: Server;

  const write = (value: string) => {
    const tmp = `${file}.new`;
    writeFileSync(tmp, JSON.stringify({ version: 1, flags: [flag(value)] }));
    renameSync(tmp, file);
  };
  const bulk = () =>
    http(`${url}/ofrep/v1/evaluate/flags`, { method: 'POST', json: { context: { targetingKey: 'u1' } }, headers: { authorization: `Bearer ${TOKEN}` } });

  beforeAll(async () => {
    if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx nx run orep-server:build\` first`);
    dir = mkdtempSync(join(tmpdir(), 'orep-push-e2e-'));
    file = join(dir, 'flags.json');
    write('hello');
    const port = await freePort();
    child = spawn(process.execPath, [main], {
      env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'trace', OREP_AUTH_TOKEN: TOKEN, OREP_FLAGS_FILE: file, OREP_PORT: String(port), METRICS_PORT: String(await freePort()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    url = `http://127.0.0.1:${port}`;
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`);
      return (await http(`${url}/readyz`).catch(() => ({ status: 0 }))).status === 200;
    }, 30000, 100);
    // The browser app's own origin, other than orep-server's.
    pageServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>'));
    pageServer.listen(0, '127.0.0.1');
    await once(pageServer, 'listening');
  });

  afterAll(async () => {
    if (child?.exitCode === null) child.kill('SIGKILL');
    pageServer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('an edited flag file reaches a Node EventSource and a Chromium page, the token is never logged, and SIGTERM ends the streams', async () => {
    const first = await bulk();
    const streamUrl = (first.body as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url;
    const token = new URL(streamUrl).searchParams.get('token')!;

    const node: string[] = [];
    // Node's global agent times a socket out after 5 s without data (Node 19+), shorter than the
    // server's heartbeat: an agent of its own, as a long-lived stream's client should use.
    const es = new EventSource(streamUrl, { agent: new Agent() });
    const streamErrors: string[] = [];
    es.addEventListener('error', (e) => streamErrors.push(e.message ?? 'error'));
    es.addEventListener('message', (e) => node.push(e.data));
    await new Promise<void>((resolve) => es.addEventListener('open', () => resolve()));

    let page: import('playwright-core').Page | undefined;
    let browser: import('playwright-core').Browser | undefined;
    if (existsSync(CHROMIUM)) {
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
      page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${(pageServer.address() as AddressInfo).port}/`);
      // What a browser OFREP provider does with the URL: a native EventSource, cross-origin, no headers.
      await page.evaluate(`new Promise((resolve, reject) => {
        window.got = [];
        const source = new EventSource(${JSON.stringify(streamUrl)});
        source.onmessage = (e) => window.got.push(e.data);
        source.onopen = () => resolve();
        source.onerror = () => reject(new Error('EventSource failed'));
      })`);
    } else {
      console.warn(`no Chromium at ${CHROMIUM}: the browser half is skipped`);
    }

    // A first connection may first be told of the last change (the initial load, here): let it arrive.
    await new Promise((r) => setTimeout(r, 300));
    const nodeSeen = node.length;
    const pageSeen = page === undefined ? 0 : ((await page.evaluate('window.got.length')) as number);
    write('bonjour');
    await waitFor(async () => node.length > nodeSeen, 10000, 20);
    expect(JSON.parse(node[nodeSeen]!)).toMatchObject({ type: 'refetchEvaluation', etag: expect.stringMatching(/^"\d+"$/), lastModified: expect.any(Number) });
    if (page !== undefined) {
      await waitFor(async () => ((await page.evaluate('window.got.length')) as number) > pageSeen, 10000, 20);
      expect(JSON.parse(((await page.evaluate('window.got')) as string[])[pageSeen]!)).toMatchObject({ type: 'refetchEvaluation' });
    }
    const after = await bulk();
    expect((after.body as { flags: Array<{ value: string }> }).flags[0]!.value).toBe('bonjour');

    // Requests that carry the token where it does not belong, or a broken one.
    await http(`${url}/ofrep/v1/events/x?token=${token}`);
    await http(`${url}/ofrep/v1/events?token=${token}x`);
    await http(`${url}/no-such-route?token=${token}`);
    await http(`${url}/ofrep/v1/events?token=${token}`, { method: 'POST' });

    // The stream held throughout (however long Chromium took to start): no error, no reconnect.
    expect(streamErrors).toEqual([]);
    const exit = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    es.close();
    await browser?.close();
    const mac = token.slice(token.indexOf('.') + 1);
    expect(out).not.toBe('');
    expect(out).not.toContain(mac);
  });
});
