/**
 * OpenFeature's own web provider (@openfeature/ofrep-web-provider 0.4.3 on @openfeature/web-sdk
 * 1.10.0, which read ADR-0008's `eventStreams`) in Chromium, against the built orep-server (file
 * mode) behind a same-origin proxy, as a browser app would reach it with a browser key (what the
 * page holds is public): the provider fetches the bulk evaluation, which holds only the flags
 * available to browsers, opens the SSE stream it names, and re-fetches when an edited flag file is
 * announced, with no polling at all; a server-only flag is FLAG_NOT_FOUND for it. Both packages are the project's devDependencies, served to the page from
 * node_modules; like the console's Chromium specs, it is skipped only where Chromium is missing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import type { FlagDefinition } from '@flagship/flag-evaluation';
import { freePort, http, waitFor } from '@flagship/testing';

const root = join(__dirname, '..', '..', '..', '..');
const main = join(root, 'dist/apps/orep-server/apps/orep-server/src/main.js');
const modules = join(root, 'node_modules/@openfeature');
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const TOKEN = 'e2e-web-provider-token';
/** What the page holds: a browser key (OREP_CLIENT_KEYS), never the server token. */
const BROWSER_KEY = 'pk_e2e_web_provider_0001';
const HAVE = existsSync(CHROMIUM);
if (!HAVE) console.warn(`ofrep-web-provider e2e skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);

const IMPORTS = {
  imports: {
    '@openfeature/core': '/m/core/dist/esm/index.js',
    '@openfeature/web-sdk': '/m/web-sdk/dist/esm/index.js',
    // The provider's own ofrep-core (2.x); the project's top-level one is the server provider's 0.1.
    '@openfeature/ofrep-core': '/m/ofrep-web-provider/node_modules/@openfeature/ofrep-core/index.esm.js',
    '@openfeature/ofrep-web-provider': '/m/ofrep-web-provider/index.esm.js',
  },
};

/** The app's page: the provider on the page's own origin, SSE change detection, polling off. */
const PAGE = `<!doctype html><html><head><title>app</title>
<script type="importmap">${JSON.stringify(IMPORTS)}</script>
<script type="module">
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
window.changed = [];
await OpenFeature.setContext({ targetingKey: 'u1' });
await OpenFeature.setProviderAndWait(new OFREPWebProvider({
  baseUrl: location.origin,
  headers: [['Authorization', 'Bearer ${BROWSER_KEY}']],
  changeDetection: 'sse',
  pollInterval: 0,
}));
const client = OpenFeature.getClient();
OpenFeature.addHandler(ProviderEvents.ConfigurationChanged, (e) => window.changed.push(e.flagsChanged));
window.greeting = () => client.getStringValue('greeting', 'none');
window.secret = () => client.getStringDetails('secret-price', 'none');
window.ready = true;
</script></head><body></body></html>`;

const flag = (value: string, key = 'greeting'): FlagDefinition => ({
  key,
  type: 'string',
  defaultValue: value,
  variations: [{ id: 'v', name: 'V', value, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
  ...(key === 'greeting' ? { clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false } } : {}),
});

jest.setTimeout(60000);

(HAVE ? describe : describe.skip)('OpenFeature web provider in Chromium, pushed by orep-server', () => {
  let dir: string;
  let file: string;
  let child: ChildProcess;
  let out = '';
  let orepPort: number;
  let app: Server;
  let browser: Browser;
  let page: Page;
  /** Every URL the page requested. */
  const requested: string[] = [];

  const write = (value: string) => {
    writeFileSync(`${file}.new`, JSON.stringify({ version: 1, flags: [flag(value), flag('42 EUR', 'secret-price')] }));
    renameSync(`${file}.new`, file);
  };

  beforeAll(async () => {
    if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx nx run orep-server:build\` first`);
    dir = mkdtempSync(join(tmpdir(), 'orep-web-provider-'));
    file = join(dir, 'flags.json');
    write('hello');
    orepPort = await freePort();
    child = spawn(process.execPath, [main], {
      env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', OREP_AUTH_TOKEN: TOKEN, OREP_CLIENT_KEYS: BROWSER_KEY, OREP_FLAGS_FILE: file, OREP_PORT: String(orepPort), METRICS_PORT: String(await freePort()) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`);
      return (await http(`http://127.0.0.1:${orepPort}/readyz`).catch(() => ({ status: 0 }))).status === 200;
    }, 30000, 100);

    // The browser app's origin: its page, the packages, and /ofrep/ passed through to orep-server
    // (a reverse proxy as an ingress would be, streaming, Host kept so the SSE URL names this origin).
    app = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      if (path === '/') return res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
      if (path.startsWith('/m/')) {
        const at = normalize(join(modules, path.slice(3)));
        if (!at.startsWith(modules) || !existsSync(at)) return res.writeHead(404).end();
        return res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(at));
      }
      if (path.startsWith('/ofrep/')) {
        const upstream = request({ host: '127.0.0.1', port: orepPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        upstream.on('error', () => res.destroy());
        req.pipe(upstream);
        res.on('close', () => upstream.destroy());
        return;
      }
      res.writeHead(404).end();
    });
    app.listen(0, '127.0.0.1');
    await once(app, 'listening');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage();
    page.on('pageerror', (e) => (out += `\npage error: ${String(e)}`));
    page.on('request', (r) => requested.push(r.url()));
  });

  afterAll(async () => {
    await browser?.close();
    app?.closeAllConnections();
    app?.close();
    if (child?.exitCode === null) child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the provider connects to the stream the bulk answer names and re-fetches on refetchEvaluation', async () => {
    await page.goto(`http://127.0.0.1:${(app.address() as AddressInfo).port}/`);
    await waitFor(async () => (await page.evaluate('window.ready === true')) as boolean, 20000, 50).catch(() => {
      throw new Error(`the page did not start: ${out}`);
    });
    expect(await page.evaluate('window.greeting()')).toBe('hello');
    // The server-only flag is not in what the browser was sent: to its key it does not exist.
    expect(await page.evaluate('window.secret()')).toMatchObject({ value: 'none', reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    // The provider holds the SSE stream (EventSource) the bulk answer named: one stream, on this origin.
    await waitFor(async () => requested.some((u) => u.includes('/ofrep/v1/events')), 5000, 20);
    const streams = requested.filter((u) => u.includes('/ofrep/v1/events'));
    expect(streams).toHaveLength(1);
    expect(streams[0]).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${(app.address() as AddressInfo).port}/ofrep/v1/events\\?token=`));

    // The stream's first event may be the initial load (a first connection is told of a recent
    // change, RefetchEvents.freshConnectMs); the provider's re-fetch for it finds nothing new.
    await new Promise((r) => setTimeout(r, 500));
    const fetchedBefore = requested.filter((u) => u.includes('/ofrep/v1/evaluate/flags')).length;
    write('bonjour');
    await waitFor(async () => (await page.evaluate('window.greeting()')) === 'bonjour', 10000, 50);
    expect(await page.evaluate('window.changed')).toEqual([['greeting']]);
    // The re-fetch carried the event's metadata (ADR-0008: flagConfigEtag, flagConfigLastModified).
    const refetches = requested.filter((u) => u.includes('/ofrep/v1/evaluate/flags'));
    expect(refetches.some((u) => /flagConfigEtag=%22\d+%22&flagConfigLastModified=\d+/.test(u))).toBe(true);
    // Pushed, not polled: one re-fetch for the change, and still the one stream.
    await new Promise((r) => setTimeout(r, 300));
    expect(requested.filter((u) => u.includes('/ofrep/v1/evaluate/flags'))).toHaveLength(fetchedBefore + 1);
    expect(requested.filter((u) => u.includes('/ofrep/v1/events'))).toHaveLength(1);
    expect(out).not.toMatch(/page error/);
  });

  it("the page's key gets only the browser flags in bulk, and cannot evaluate the server-only one alone", async () => {
    const post = (path: string, key: string) =>
      fetch(`http://127.0.0.1:${orepPort}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ context: { targetingKey: 'u1' } }) });
    const browser = (await (await post('/ofrep/v1/evaluate/flags', BROWSER_KEY)).json()) as { flags: Array<{ key: string }> };
    const server = (await (await post('/ofrep/v1/evaluate/flags', TOKEN)).json()) as { flags: Array<{ key: string }> };
    expect(browser.flags.map((f) => f.key)).toEqual(['greeting']);
    expect(server.flags.map((f) => f.key).sort()).toEqual(['greeting', 'secret-price']);
    expect((await post('/ofrep/v1/evaluate/flags/secret-price', BROWSER_KEY)).status).toBe(404);
    expect((await post('/ofrep/v1/evaluate/flags/secret-price', TOKEN)).status).toBe(200);
  });
});
