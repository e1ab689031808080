import { request } from 'node:http';
import type { RunningApp } from '@flagship/service-kit';
import { http, waitFor } from '@flagship/testing';
import { TenantFlagsFixture } from '../testing/tenant-flags.fixture';
import { RawSse } from './sse-client.fixture';
import { SseTokens } from './sse-token';

/**
 * OFREP push (ADR-0008) through the real app in Postgres mode: flags changed with SQL in this file's
 * own database and announced on Redis exactly as management-api announces them; the stream read by
 * LaunchDarkly's Node EventSource (the client library the ADR names) and by a raw reader that sees
 * the wire as sent (headers, comments).
 */

// LaunchDarkly's EventSource (launchdarkly-eventsource, CommonJS, untyped): what the tests use of it.
interface LdEventSource {
  addEventListener(type: 'message', listener: (event: { data: string; lastEventId: string }) => void): void;
  addEventListener(type: 'open' | 'error', listener: (event: { status?: number }) => void): void;
  close(): void;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { EventSource } = require('launchdarkly-eventsource') as {
  EventSource: new (url: string, init?: { headers?: Record<string, string>; initialRetryDelayMillis?: number; errorFilter?: () => boolean }) => LdEventSource;
};

const TOKEN = 'push-test-token';
const TENANT = '7a0c3a52-1b7e-4c1e-9a51-2d9f4c1e0b01';
const auth = { authorization: `Bearer ${TOKEN}` };
const context = { targetingKey: 'u1' };

jest.setTimeout(30000);

interface Refetch {
  type: string;
  etag: string;
  lastModified: number;
}

describe('OFREP push', () => {
  let f: TenantFlagsFixture;
  const apps: RunningApp[] = [];
  const sources: Array<{ close(): void }> = [];

  const startOrep = async (extra: NodeJS.ProcessEnv = {}): Promise<RunningApp> => {
    const app = await f.startOrep({ OREP_AUTH_TOKEN: TOKEN, ...extra });
    apps.push(app);
    return app;
  };

  /** Changes the number flag `key` to `value` in production and announces it, as management-api does. */
  const change = (key: string, value: number, announce = true): Promise<void> => f.writeNumberFlag(key, value, announce);
  const announceChange = (key: string) => f.announce(key);

  const bulk = (app: RunningApp, query = '', headers: Record<string, string> = {}) =>
    http(`${app.url}/ofrep/v1/evaluate/flags${query}`, { method: 'POST', json: { context }, headers: { ...auth, ...headers } });

  /** The SSE URL a bulk answer hands out. */
  const streamUrl = async (app: RunningApp): Promise<string> => {
    const res = await bulk(app);
    return (res.body as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url;
  };

  /** A just-opened stream may first get the last change (RefetchEvents.freshConnectMs): let it arrive. */
  const settle = () => new Promise((r) => setTimeout(r, 150));

  const subscribed = (app: RunningApp) => f.subscribed(app);

  beforeAll(async () => {
    f = await TenantFlagsFixture.start(TENANT);
    await change('limit', 1);
  });

  afterAll(async () => {
    for (const s of sources) s.close();
    await f?.close();
  });

  describe('one app, defaults', () => {
    let app: RunningApp;

    beforeAll(async () => {
      app = await startOrep();
      await subscribed(app);
    });

    it('the bulk answer names the stream as the ADR says, and ETag/304 keep working', async () => {
      const res = await bulk(app);
      expect(res.status).toBe(200);
      const body = res.body as { flags: unknown[]; eventStreams: unknown[]; refreshConnections: unknown[] };
      expect(body.flags).toEqual([expect.objectContaining({ key: 'limit', value: 1 })]);
      expect(body.eventStreams).toEqual([{ type: 'sse', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/ofrep\/v1\/events\?token=\d+\.[\w-]{43}$/), inactivityDelaySec: 120 }]);
      expect(body.refreshConnections).toEqual(body.eventStreams);
      const etag = res.headers.get('etag')!;
      const again = await bulk(app, '', { 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
    });

    it('a flag changed in Postgres and announced on Redis reaches an EventSource as refetchEvaluation; the re-fetch sees it', async () => {
      const before = await bulk(app);
      const es = new EventSource(await streamUrl(app));
      sources.push(es);
      const messages: Array<{ data: Refetch; id: string }> = [];
      es.addEventListener('message', (e) => messages.push({ data: JSON.parse(e.data) as Refetch, id: e.lastEventId }));
      await new Promise<void>((resolve) => es.addEventListener('open', () => resolve()));
      await settle();
      const seen = messages.length;

      const changedAt = Date.now();
      await change('limit', 2);
      await waitFor(async () => messages.length > seen, 5000, 10);
      const first = messages[seen];
      expect(first!.data).toEqual({ type: 'refetchEvaluation', etag: `"${first!.id}"`, lastModified: Math.floor(Number(first!.id) / 1000) });
      expect(Number(first!.id)).toBeGreaterThanOrEqual(changedAt - 1000);

      // The provider's re-fetch: flagConfigEtag / flagConfigLastModified from the event, If-None-Match from before.
      const query = `?flagConfigEtag=${encodeURIComponent(first!.data.etag)}&flagConfigLastModified=${first!.data.lastModified}`;
      const refetch = await bulk(app, query, { 'if-none-match': before.headers.get('etag')! });
      expect(refetch.status).toBe(200);
      expect((refetch.body as { flags: Array<{ value: unknown }> }).flags[0]!.value).toBe(2);
      // Nothing changed since for this client: 304, with the event's version or the ADR's earlier names.
      const etag = refetch.headers.get('etag')!;
      expect((await bulk(app, query, { 'if-none-match': etag })).status).toBe(304);
      expect((await bulk(app, `?sseEtag=${encodeURIComponent(first!.data.etag)}`, { 'if-none-match': etag })).status).toBe(304);
      es.close();
    });

    it('a re-fetch naming another version (another replica, before a restart) is answered in full, never 304', async () => {
      const etag = (await bulk(app)).headers.get('etag')!;
      expect((await bulk(app, '?flagConfigEtag=%22123%22', { 'if-none-match': etag })).status).toBe(200);
      expect((await bulk(app, `?flagConfigLastModified=${Math.floor(Date.now() / 1000) + 60}`, { 'if-none-match': etag })).status).toBe(200);
      // Unreadable metadata is ignored: If-None-Match decides.
      expect((await bulk(app, '?flagConfigLastModified=soon', { 'if-none-match': etag })).status).toBe(304);
    });

    it('a burst of changes is told as one event', async () => {
      const sse = await RawSse.open(await streamUrl(app));
      sources.push(sse);
      await settle();
      const seen = sse.events.length;
      const keys = ['burst-a', 'burst-b', 'burst-c', 'burst-d', 'burst-e'];
      for (const key of keys) await change(key, 1, false);
      await Promise.all(keys.map(announceChange));
      await waitFor(async () => sse.events.length > seen, 5000, 10);
      await new Promise((r) => setTimeout(r, 300));
      // The source applies the five in one read, or two when the first message's read starts alone.
      expect(sse.events.length - seen).toBeLessThanOrEqual(2);
      sse.close();
    });

    it('the stream: headers, event format, and replay from Last-Event-ID within the window', async () => {
      const url = await streamUrl(app);
      const sse = await RawSse.open(url);
      sources.push(sse);
      expect(sse.status).toBe(200);
      expect(sse.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(sse.headers['cache-control']).toBe('no-cache');
      expect(sse.headers['x-accel-buffering']).toBe('no');
      await settle();
      for (let i = 10; i < 13; i++) {
        const seen = sse.events.length;
        await change('limit', i);
        await waitFor(async () => sse.events.length > seen, 5000, 10);
      }
      const ids = sse.events.map((e) => e.id!);
      expect(sse.events.every((e) => e.event === 'message')).toBe(true);
      expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((a, b) => a - b));
      sse.close();

      // Resuming after the first of the three: the two after it, same ids and bytes.
      const resumed = await RawSse.open(url, { 'last-event-id': ids[ids.length - 3]! });
      sources.push(resumed);
      await waitFor(async () => resumed.events.length >= 2, 2000, 10);
      expect(resumed.events.map((e) => e.id)).toEqual(ids.slice(-2));
      expect(resumed.events.map((e) => e.data)).toEqual(sse.events.slice(-2).map((e) => e.data));
      resumed.close();

      // Up to date: nothing. Unknown or older than the window (a restart): one event naming the current version.
      const current = await RawSse.open(url, { 'last-event-id': ids[ids.length - 1]! });
      const unknown = await RawSse.open(url, { 'last-event-id': 'not-an-id' });
      const ancient = await RawSse.open(url, { 'last-event-id': '1000' });
      sources.push(current, unknown, ancient);
      await waitFor(async () => unknown.events.length === 1 && ancient.events.length === 1, 2000, 10);
      await new Promise((r) => setTimeout(r, 100));
      expect(current.events).toEqual([]);
      expect(unknown.events.map((e) => e.id)).toEqual([ids[ids.length - 1]]);
      expect(ancient.events.map((e) => e.id)).toEqual([ids[ids.length - 1]]);
      for (const s of [current, unknown, ancient]) s.close();
    });

    it('authentication: the header token, or the URL token; anything else is a bodiless 401', async () => {
      const url = new URL(await streamUrl(app));
      const token = url.searchParams.get('token')!;
      const bare = `${app.url}/ofrep/v1/events`;
      const statusOf = async (u: string, headers: Record<string, string> = {}) => {
        const s = await RawSse.open(u, headers);
        s.close();
        return s.status;
      };
      expect(await statusOf(bare, auth)).toBe(200);
      expect(await statusOf(bare, { 'x-api-key': TOKEN })).toBe(200);
      expect(await statusOf(`${bare}?token=${token}`)).toBe(200);
      expect(await statusOf(bare)).toBe(401);
      expect(await statusOf(bare, { authorization: 'Bearer nope' })).toBe(401);
      // A wrong header token is not rescued by a good URL token.
      expect(await statusOf(`${bare}?token=${token}`, { authorization: 'Bearer nope' })).toBe(401);
      const mac = token.slice(token.indexOf('.') + 1);
      const exp = Number(token.slice(0, token.indexOf('.')));
      const tampered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
      expect(await statusOf(`${bare}?token=${tampered}`)).toBe(401);
      // Another expiry with the same MAC; a token expired; one minted for another tenant or with another secret.
      expect(await statusOf(`${bare}?token=${exp + 1}.${mac}`)).toBe(401);
      const ttl = 900;
      expect(await statusOf(`${bare}?token=${new SseTokens(TOKEN, `postgres:${TENANT}:production`, ttl).mint('server', Date.now() - 2000 * ttl)}`)).toBe(401);
      expect(await statusOf(`${bare}?token=${new SseTokens(TOKEN, `postgres:${TENANT}:staging`, ttl).mint()}`)).toBe(401);
      expect(await statusOf(`${bare}?token=${new SseTokens('other-secret', `postgres:${TENANT}:production`, ttl).mint()}`)).toBe(401);
      // Scoped to the stream: the URL token opens no evaluation route.
      const evaluate = await http(`${app.url}/ofrep/v1/evaluate/flags?token=${token}`, { method: 'POST', json: { context } });
      expect(evaluate.status).toBe(401);
    });

    it('the token never reaches the metrics (route templates only)', async () => {
      const token = new URL(await streamUrl(app)).searchParams.get('token')!;
      const s = await RawSse.open(`${app.url}/ofrep/v1/events?token=${token}`);
      s.close();
      const metrics = await http(`${app.metricsUrl}/metrics`);
      expect(metrics.text).toContain('/ofrep/v1/events');
      expect(metrics.text).not.toContain(token.slice(token.indexOf('.') + 1));
    });
  });

  describe('bounds and heartbeats', () => {
    let app: RunningApp;

    beforeAll(async () => {
      // TRUST_PROXY: the client address is X-Forwarded-For's, so one test can be several addresses.
      app = await startOrep({ OREP_SSE_MAX_CONNECTIONS: '3', OREP_SSE_MAX_PER_ADDRESS: '2', OREP_SSE_HEARTBEAT_S: '0.1', TRUST_PROXY: '1' });
    });

    const bare = () => `${app.url}/ofrep/v1/events`;
    const from = (address: string) => ({ ...auth, 'x-forwarded-for': address });

    it('the stream URL: https behind a trusted proxy that says so, on the Host the client used', async () => {
      // fetch cannot set Host: node:http can.
      const urlFor = (headers: Record<string, string>) =>
        new Promise<string>((resolve, reject) => {
          const req = request(`${app.url}/ofrep/v1/evaluate/flags`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', ...headers } }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text += c));
            res.on('end', () => resolve((JSON.parse(text) as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url));
          });
          req.on('error', reject);
          req.end(JSON.stringify({ context }));
        });
      expect(await urlFor({ 'x-forwarded-proto': 'https', host: 'flags.example.com' })).toMatch(/^https:\/\/flags\.example\.com\/ofrep\/v1\/events\?token=/);
      // A Host that is no host name is not echoed.
      expect(await urlFor({ host: 'evil.example.com/"><x' })).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/ofrep/);
    });

    it('comment heartbeats at the interval', async () => {
      const sse = await RawSse.open(bare(), auth);
      await new Promise((r) => setTimeout(r, 450));
      const beats = sse.frames.filter((f) => f.comments.includes('keep-alive')).length;
      expect(beats).toBeGreaterThanOrEqual(2);
      expect(beats).toBeLessThanOrEqual(6);
      sse.close();
    });

    it('per address: the one over OREP_SSE_MAX_PER_ADDRESS is refused 429 with Retry-After; a closed one frees its place', async () => {
      const a = await RawSse.open(bare(), from('10.0.0.1'));
      const b = await RawSse.open(bare(), from('10.0.0.1'));
      const c = await RawSse.open(bare(), from('10.0.0.1'));
      expect([a.status, b.status, c.status]).toEqual([200, 200, 429]);
      expect(c.headers['retry-after']).toBe('5');
      a.close();
      await waitFor(async () => {
        const d = await RawSse.open(bare(), from('10.0.0.1'));
        d.close();
        return d.status === 200;
      }, 2000, 20);
      b.close();
      c.close();
    });

    it('in all: the one over OREP_SSE_MAX_CONNECTIONS is refused 503, from any address', async () => {
      await waitFor(async () => {
        const probe = await RawSse.open(bare(), from('10.0.0.9'));
        probe.close();
        return probe.status === 200;
      }, 2000, 20);
      await new Promise((r) => setTimeout(r, 50)); // the probe's close reaches the server
      const open = [await RawSse.open(bare(), from('10.0.0.2')), await RawSse.open(bare(), from('10.0.0.3')), await RawSse.open(bare(), from('10.0.0.4'))];
      const over = await RawSse.open(bare(), from('10.0.0.5'));
      expect([...open.map((s) => s.status), over.status]).toEqual([200, 200, 200, 503]);
      expect(over.headers['retry-after']).toBe('5');
      // The open streams are what orep_sse_connections says (what an autoscaler scales on); the refused one is not counted.
      const connections = async () => Number(/^orep_sse_connections(?:\{[^}]*\})? (\d+)$/m.exec((await http(`${app.metricsUrl}/metrics`)).text)?.[1]);
      expect(await connections()).toBe(3);
      for (const s of [...open, over]) s.close();
      await waitFor(async () => (await connections()) === 0, 2000, 20);
    });
  });

  it('shutting down ends every open stream (the HTTP server could not close otherwise)', async () => {
    const app = await startOrep();
    const sse = await RawSse.open(`${app.url}/ofrep/v1/events`, auth);
    expect(sse.status).toBe(200);
    await app.close();
    await waitFor(async () => sse.ended, 2000, 10);
  });

  it('OREP_PUBLIC_URL names the origin (and path prefix) the stream URL is built on', async () => {
    const app = await startOrep({ OREP_PUBLIC_URL: 'https://app.example.com/flags/' });
    const res = await bulk(app);
    expect((res.body as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url).toMatch(/^https:\/\/app\.example\.com\/flags\/ofrep\/v1\/events\?token=\d+\./);
  });

  it('a first connection right after a change is told of it (the change may have fallen between its fetch and its connect)', async () => {
    const app = apps[0]!;
    await change('limit', 40);
    const url = await streamUrl(app);
    await new Promise((r) => setTimeout(r, 100));
    const fresh = await RawSse.open(url);
    sources.push(fresh);
    await waitFor(async () => fresh.events.length === 1, 2000, 10);
    expect(JSON.parse(fresh.events[0]!.data!)).toMatchObject({ type: 'refetchEvaluation' });
    fresh.close();
  });

  it('OREP_SSE_MAX_CONNECTIONS=0 turns push off: no eventStreams, no route', async () => {
    const app = await startOrep({ OREP_SSE_MAX_CONNECTIONS: '0' });
    const res = await bulk(app);
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('eventStreams');
    const off = await RawSse.open(`${app.url}/ofrep/v1/events`, auth);
    off.close();
    expect(off.status).toBe(404);
  });
});
