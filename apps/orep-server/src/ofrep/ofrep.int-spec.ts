import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { type Client, ErrorCode, OpenFeature } from '@openfeature/server-sdk';
import type { FlagDefinition } from '@flagship/flag-evaluation';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { http } from '@flagship/testing';
import { AppModule } from '../app.module';
import { loadOrepServerConfig } from '../env.schema';
import { installFastPath } from '../fast-path/install-fast-path';

/**
 * OFREP through OpenFeature's own server SDK and OFREP provider, unchanged, against the app on a real
 * port (file mode: no database needed), plus raw HTTP for what the provider cannot send.
 */

const TOKEN = 'ofrep-test-token';
const onOff = [
  { id: 'on', name: 'On', value: true, weight: 0 },
  { id: 'off', name: 'Off', value: false, weight: 0 },
];

const TEST_FLAGS: FlagDefinition[] = [
  {
    key: 'bool-flag',
    type: 'boolean',
    defaultValue: false,
    variations: onOff,
    enabled: true,
    targets: [{ variationId: 'on', values: ['user-target'] }],
    rules: [{ id: 'french', clauses: [{ attribute: 'country', op: 'in', values: ['FR'] }], variationId: 'on' }],
    prerequisites: [],
    version: 7,
  },
  { key: 'bool-off', type: 'boolean', defaultValue: true, variations: onOff, enabled: false, targets: [], rules: [], prerequisites: [] },
  {
    key: 'string-flag',
    type: 'string',
    defaultValue: 'basic',
    variations: [
      { id: 'basic', name: 'Basic', value: 'basic', weight: 0 },
      { id: 'gold', name: 'Gold', value: 'gold', weight: 0 },
    ],
    enabled: true,
    targets: [],
    rules: [{ id: 'premium', clauses: [{ attribute: 'plan', op: 'in', values: ['premium'] }], variationId: 'gold' }],
    prerequisites: [],
  },
  {
    key: 'number-flag',
    type: 'number',
    defaultValue: 0,
    // A fallthrough rollout that always picks the second slice: reason SPLIT.
    variations: [
      { id: 'zero', name: 'Zero', value: 0, weight: 0 },
      { id: 'forty-two', name: '42', value: 42.5, weight: 1 },
    ],
    enabled: true,
    targets: [],
    rules: [],
    prerequisites: [],
  },
  {
    key: 'object-flag',
    type: 'json',
    defaultValue: { layout: 'table' },
    variations: [
      { id: 'table', name: 'Table', value: { layout: 'table' }, weight: 0 },
      { id: 'cards', name: 'Cards', value: { layout: 'cards', columns: [1, 2] }, weight: 0 },
    ],
    enabled: true,
    targets: [],
    rules: [{ id: 'everyone', clauses: [], rollout: { variations: [{ variationId: 'cards', weight: 1 }] } }],
    prerequisites: [],
  },
  {
    key: 'needs-bool-off',
    type: 'boolean',
    defaultValue: false,
    variations: onOff,
    enabled: true,
    targets: [],
    rules: [],
    prerequisites: [{ key: 'bool-off', variationId: 'on' }],
  },
  // A prerequisite cycle: valid one flag at a time, malformed when evaluated.
  { key: 'cycle-a', type: 'boolean', defaultValue: false, variations: onOff, enabled: true, targets: [], rules: [], prerequisites: [{ key: 'cycle-b', variationId: 'on' }] },
  { key: 'cycle-b', type: 'boolean', defaultValue: false, variations: onOff, enabled: true, targets: [], rules: [], prerequisites: [{ key: 'cycle-a', variationId: 'on' }] },
];

async function startOrep(flagsFile: string, extra: NodeJS.ProcessEnv = {}): Promise<RunningApp> {
  const config = loadOrepServerConfig({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    OREP_AUTH_TOKEN: TOKEN,
    OREP_FLAGS_FILE: flagsFile,
    ...extra,
  });
  return startTestApp(AppModule.forConfig(config), installFastPath);
}

const post = (url: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
  http(url, { method: 'POST', json: body, headers });

describe('OFREP', () => {
  let dir: string;
  let svc: RunningApp;
  let client: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-ofrep-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ version: 1, flags: TEST_FLAGS }));
    svc = await startOrep(file);
    await OpenFeature.setProviderAndWait('orep', new OFREPProvider({ baseUrl: svc.url, headers: [['Authorization', `Bearer ${TOKEN}`]] }));
    client = OpenFeature.getClient('orep');
  });

  afterAll(async () => {
    await OpenFeature.close();
    await svc?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('through the OpenFeature SDK and the npm OFREP provider', () => {
    it('boolean: target, rule, default and off, with reasons and variants', async () => {
      expect(await client.getBooleanDetails('bool-flag', false, { targetingKey: 'user-target' })).toMatchObject({
        value: true,
        variant: 'on',
        reason: 'TARGETING_MATCH',
        flagMetadata: { version: 7 },
      });
      expect(await client.getBooleanDetails('bool-flag', false, { targetingKey: 'u1', country: 'FR' })).toMatchObject({
        value: true,
        variant: 'on',
        reason: 'TARGETING_MATCH',
        flagMetadata: { version: 7, ruleId: 'french', ruleIndex: 0 },
      });
      const fallthrough = await client.getBooleanDetails('bool-flag', true, { targetingKey: 'u1', country: 'DE' });
      expect(fallthrough).toMatchObject({ value: false, reason: 'DEFAULT' });
      expect(fallthrough.errorCode).toBeUndefined();
      expect(await client.getBooleanDetails('bool-off', true, { targetingKey: 'u1' })).toMatchObject({
        value: false,
        variant: 'off',
        reason: 'DISABLED',
      });
    });

    it('string, number and object flags', async () => {
      expect(await client.getStringDetails('string-flag', 'x', { targetingKey: 'u1', plan: 'premium' })).toMatchObject({
        value: 'gold',
        variant: 'gold',
        reason: 'TARGETING_MATCH',
      });
      expect(await client.getStringDetails('string-flag', 'x', { targetingKey: 'u1', plan: 'free' })).toMatchObject({
        value: 'basic',
        reason: 'DEFAULT',
      });
      expect(await client.getNumberDetails('number-flag', -1, { targetingKey: 'u1' })).toMatchObject({
        value: 42.5,
        variant: 'forty-two',
        reason: 'SPLIT',
      });
      expect(await client.getObjectDetails('object-flag', {}, { targetingKey: 'u1' })).toMatchObject({
        value: { layout: 'cards', columns: [1, 2] },
        variant: 'cards',
        reason: 'SPLIT',
        flagMetadata: { ruleId: 'everyone' },
      });
    });

    it('a failed prerequisite serves the off value with its own reason', async () => {
      expect(await client.getBooleanDetails('needs-bool-off', true, { targetingKey: 'u1' })).toMatchObject({
        value: false,
        reason: 'PREREQUISITE_FAILED',
        flagMetadata: { prerequisiteKey: 'bool-off' },
      });
    });

    it('the OpenFeature errors: flag not found, type mismatch, no targeting key, malformed flag', async () => {
      expect(await client.getBooleanDetails('no-such-flag', true, { targetingKey: 'u1' })).toMatchObject({
        value: true,
        reason: 'ERROR',
        errorCode: ErrorCode.FLAG_NOT_FOUND,
      });
      expect(await client.getStringDetails('bool-flag', 'fallback', { targetingKey: 'u1' })).toMatchObject({
        value: 'fallback',
        reason: 'ERROR',
        errorCode: ErrorCode.TYPE_MISMATCH,
      });
      expect(await client.getNumberDetails('object-flag', 3, { targetingKey: 'u1' })).toMatchObject({
        value: 3,
        errorCode: ErrorCode.TYPE_MISMATCH,
      });
      expect(await client.getBooleanDetails('bool-flag', true, {})).toMatchObject({
        value: true,
        errorCode: ErrorCode.TARGETING_KEY_MISSING,
      });
      expect(await client.getBooleanDetails('cycle-a', true, { targetingKey: 'u1' })).toMatchObject({
        value: true,
        errorCode: ErrorCode.GENERAL,
      });
    });

    it('X-API-Key works as well as the bearer token; a wrong token yields the default', async () => {
      await OpenFeature.setProviderAndWait('by-key', new OFREPProvider({ baseUrl: svc.url, headers: [['X-API-Key', TOKEN]] }));
      expect(await OpenFeature.getClient('by-key').getBooleanValue('bool-flag', false, { targetingKey: 'user-target' })).toBe(true);
      await OpenFeature.setProviderAndWait('wrong', new OFREPProvider({ baseUrl: svc.url, headers: [['Authorization', 'Bearer nope']] }));
      const refused = await OpenFeature.getClient('wrong').getBooleanDetails('bool-flag', false, { targetingKey: 'user-target' });
      expect(refused).toMatchObject({ value: false, reason: 'ERROR', errorCode: ErrorCode.GENERAL });
    });
  });

  describe('single evaluation over raw HTTP', () => {
    const url = () => `${svc.url}/ofrep/v1/evaluate/flags/bool-flag`;

    it('200 is application/json with key, value, reason, variant, metadata and a request id', async () => {
      const res = await post(url(), { context: { targetingKey: 'user-target' } }, { authorization: `Bearer ${TOKEN}`, 'x-request-id': 'req-1' });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json');
      // The server's own id; the caller's kept beside it.
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.headers.get('x-client-request-id')).toBe('req-1');
      expect(res.body).toEqual({ key: 'bool-flag', value: true, reason: 'TARGETING_MATCH', variant: 'on', metadata: { version: 7 } });
    });

    it("a problem on the fast path names the server's request id as instance, never the caller's", async () => {
      const res = await http(`${svc.url}/v1/flags/bool-flag/evaluate`, { method: 'POST', body: 'x', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain', 'x-request-id': 'req-2' } });
      expect(res.status).toBe(415);
      expect([res.body.instance, res.headers.get('x-client-request-id')]).toEqual([res.headers.get('x-request-id'), 'req-2']);
      expect(res.body.instance).toMatch(/^[0-9a-f-]{36}$/);
      const plain = await post(url(), { context: { targetingKey: 'u' } });
      expect([plain.status, plain.headers.get('x-client-request-id')]).toEqual([200, null]);
    });

    it('401 with no body without a token or with a wrong one', async () => {
      const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer wrong' }, { authorization: `Basic ${TOKEN}` }, { 'x-api-key': `${TOKEN}x` }];
      for (const headers of attempts) {
        const res = await post(url(), { context: { targetingKey: 'u' } }, headers);
        expect([res.status, res.text]).toEqual([401, '']);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
      }
    });

    it('accepts X-API-Key and a lower-case bearer scheme', async () => {
      expect((await post(url(), { context: { targetingKey: 'u' } }, { 'x-api-key': TOKEN })).status).toBe(200);
      expect((await post(url(), { context: { targetingKey: 'u' } }, { authorization: `bearer ${TOKEN}` })).status).toBe(200);
    });

    it('404 FLAG_NOT_FOUND', async () => {
      const res = await post(`${svc.url}/ofrep/v1/evaluate/flags/missing`, { context: { targetingKey: 'u' } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ key: 'missing', errorCode: 'FLAG_NOT_FOUND', errorDetails: expect.any(String) });
    });

    it.each([
      ['PARSE_ERROR', '{"context": ', 'not valid JSON'],
      ['PARSE_ERROR', '[1, 2]', 'JSON object'],
      ['PARSE_ERROR', `${'['.repeat(10000)}${']'.repeat(10000)}`, 'deeper than 64'],
      ['PARSE_ERROR', `{"context": {"targetingKey": "u", "a": ${'{"a":'.repeat(10000)}1${'}'.repeat(10000)}}}`, 'deeper than 64'],
      ['PARSE_ERROR', `{"context": {"targetingKey": "u", "list": ${'['.repeat(10000)}${']'.repeat(10000)}}}`, 'deeper than 64'],
      ['INVALID_CONTEXT', '{"context": "user-1"}', 'context'],
      ['INVALID_CONTEXT', '{"context": {"targetingKey": 42}}', 'targetingKey'],
      ['TARGETING_KEY_MISSING', '{"context": {"country": "FR"}}', 'targetingKey'],
      ['TARGETING_KEY_MISSING', '', 'targetingKey'],
    ])('400 %s for %s', async (code, body, details) => {
      const res = await http(url(), {
        method: 'POST',
        body,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body === '' ? {} : { 'content-type': 'application/json' }) },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ key: 'bool-flag', errorCode: code, errorDetails: expect.stringContaining(details) });
    });

    it('400 GENERAL for a flag that cannot be evaluated (a prerequisite cycle)', async () => {
      const res = await post(`${svc.url}/ofrep/v1/evaluate/flags/cycle-a`, { context: { targetingKey: 'u' } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ key: 'cycle-a', errorCode: 'GENERAL', errorDetails: expect.stringContaining('malformed') });
    });

    it('415 for another content type, 413 over 1 MiB, 405 for another method: problems, never 500', async () => {
      const text = await http(url(), { method: 'POST', body: 'context', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' } });
      expect(text.status).toBe(415);
      expect(text.headers.get('content-type')).toBe('application/problem+json');
      expect(text.body).toMatchObject({ type: '/problems/unsupported-media-type', status: 415, instance: text.headers.get('x-request-id') });
      const latin1 = await http(url(), { method: 'POST', body: '{}', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json; charset=latin1' } });
      expect(latin1.status).toBe(415);
      const big = await post(url(), { context: { targetingKey: 'u', blob: 'x'.repeat(1024 * 1024) } });
      expect(big.status).toBe(413);
      expect(big.body).toMatchObject({ type: '/problems/payload-too-large', status: 413 });
      const get = await http(url(), { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
      expect(get.body).toMatchObject({ type: '/problems/method-not-allowed' });
    });

    it('accepts application/*+json with a UTF-8 charset', async () => {
      const res = await http(url(), {
        method: 'POST',
        body: JSON.stringify({ context: { targetingKey: 'user-target' } }),
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/vnd.ofrep+json; charset=UTF-8' },
      });
      expect([res.status, res.body.value]).toEqual([200, true]);
    });

    it('concurrent requests, answered in batches, each get their own answer and request id', async () => {
      const cases = Array.from({ length: 60 }, (_, i) => {
        const kind = i % 4;
        if (kind === 0) return { context: { targetingKey: 'user-target' }, want: [200, true, 'TARGETING_MATCH'] };
        if (kind === 1) return { context: { targetingKey: `u${i}`, country: 'FR' }, want: [200, true, 'TARGETING_MATCH'] };
        if (kind === 2) return { context: { targetingKey: `u${i}`, country: 'DE' }, want: [200, false, 'DEFAULT'] };
        return { context: { country: 'FR' }, want: [400, undefined, undefined] };
      });
      const answers = await Promise.all(cases.map((c) => post(url(), { context: c.context })));
      answers.forEach((res, i) => expect([res.status, res.body.value, res.body.reason]).toEqual(cases[i]!.want));
      expect(new Set(answers.map((res) => res.headers.get('x-request-id'))).size).toBe(cases.length);
    });

    it('a client that leaves halfway through its body costs nothing: the server answers the next one', async () => {
      const { port } = new URL(svc.url);
      const socket = connect(Number(port), '127.0.0.1');
      await once(socket, 'connect');
      socket.write(
        `POST /ofrep/v1/evaluate/flags/bool-flag HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"context":{"targ',
      );
      await new Promise((r) => setTimeout(r, 50));
      socket.destroy();
      await once(socket, 'close');
      await new Promise((r) => setTimeout(r, 50));
      const res = await post(url(), { context: { targetingKey: 'user-target' } });
      expect([res.status, res.body.value]).toEqual([200, true]);
    });
  });

  describe('bulk evaluation', () => {
    const url = () => `${svc.url}/ofrep/v1/evaluate/flags`;

    it('evaluates every flag, errors per flag, with an ETag; the same ETag answers 304 with no body', async () => {
      const first = await post(url(), { context: { targetingKey: 'u1', country: 'FR' } });
      expect(first.status).toBe(200);
      expect(first.headers.get('content-type')).toBe('application/json');
      const flags = first.body.flags as Array<Record<string, unknown>>;
      expect(flags.map((f) => f.key).sort()).toEqual(TEST_FLAGS.map((f) => f.key).sort());
      expect(flags.find((f) => f.key === 'bool-flag')).toEqual({
        key: 'bool-flag',
        value: true,
        reason: 'TARGETING_MATCH',
        variant: 'on',
        metadata: { version: 7, ruleId: 'french', ruleIndex: 0 },
      });
      expect(flags.find((f) => f.key === 'cycle-a')).toEqual({ key: 'cycle-a', errorCode: 'GENERAL', errorDetails: expect.any(String) });
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"[\w-]+"$/);

      const again = await post(url(), { context: { targetingKey: 'u1', country: 'FR' } }, { authorization: `Bearer ${TOKEN}`, 'if-none-match': etag });
      expect([again.status, again.text]).toEqual([304, '']);
      expect(again.headers.get('etag')).toBe(etag);
      const weak = await post(url(), { context: { targetingKey: 'u1', country: 'FR' } }, { authorization: `Bearer ${TOKEN}`, 'if-none-match': `"x", W/${etag}` });
      expect(weak.status).toBe(304);

      // Another context sees other values: another ETag, and a full answer.
      const other = await post(url(), { context: { targetingKey: 'u1', country: 'DE' } }, { authorization: `Bearer ${TOKEN}`, 'if-none-match': etag });
      expect(other.status).toBe(200);
      expect(other.headers.get('etag')).not.toBe(etag);
    });

    it('400 for the request as a whole: PARSE_ERROR, INVALID_CONTEXT, TARGETING_KEY_MISSING', async () => {
      const cases: Array<[string, string]> = [
        ['nope', 'PARSE_ERROR'],
        [`{"context": {"targetingKey": "u", "a": ${'['.repeat(10000)}${']'.repeat(10000)}}}`, 'PARSE_ERROR'],
        ['{"context": []}', 'INVALID_CONTEXT'],
        ['{"context": {}}', 'TARGETING_KEY_MISSING'],
      ];
      for (const [body, code] of cases) {
        const res = await http(url(), { method: 'POST', body, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });
        expect([res.status, res.body]).toEqual([400, { errorCode: code, errorDetails: expect.any(String) }]);
      }
    });

    it('401 with no body', async () => {
      const res = await post(url(), { context: { targetingKey: 'u1' } }, {});
      expect([res.status, res.text]).toEqual([401, '']);
    });
  });

  describe('the rest of the app', () => {
    it('counts evaluation requests in /metrics by route template', async () => {
      await post(`${svc.url}/ofrep/v1/evaluate/flags/bool-flag`, { context: { targetingKey: 'u' } });
      // The lean router hands /metrics to Express, which serves it on the internal port only.
      expect((await http(`${svc.url}/metrics`)).status).toBe(404);
      const metrics = await http<string>(`${svc.metricsUrl}/metrics`);
      expect(metrics.body).toMatch(/http_requests_total\{method="POST",route="\/ofrep\/v1\/evaluate\/flags\/:key",status="200",service="orep-server"\} \d+/);
      expect(metrics.body).toMatch(/http_requests_total\{method="POST",route="\/ofrep\/v1\/evaluate\/flags\/:key",status="401",service="orep-server"\} \d+/);
      expect(metrics.body).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/ofrep\/v1\/evaluate\/flags",status="304"[^}]*\} \d+/);
    });

    it('other routes still go through Express: /healthz, unknown routes as problems, /ofrep/v1/configuration', async () => {
      expect((await http(`${svc.url}/healthz`)).body).toEqual({ status: 'ok' });
      const unknown = await http(`${svc.url}/ofrep/v2/whatever`);
      expect(unknown.status).toBe(404);
      expect(unknown.body).toMatchObject({ type: '/problems/not-found' });
      const configuration = await http(`${svc.url}/ofrep/v1/configuration`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(configuration.status).toBe(200);
      expect(configuration.body).toMatchObject({ name: expect.any(String), capabilities: { cacheInvalidation: { polling: { enabled: true } } } });
    });

    it('/readyz is 200 with the snapshot described on the internal port, the status alone on the public one', async () => {
      const res = await http(`${svc.metricsUrl}/readyz`);
      expect(res.status).toBe(200);
      expect((await http(`${svc.url}/readyz`)).body).toEqual({ status: 'ok' });
      expect(res.body.details.snapshot).toMatchObject({ status: 'up', kind: 'file', flags: TEST_FLAGS.length, ageSeconds: expect.any(Number) });
    });
  });
});

describe('OFREP rate limit', () => {
  let dir: string;
  let svc: RunningApp;
  let behindProxy: RunningApp;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-ofrep-limit-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ version: 1, flags: TEST_FLAGS }));
    svc = await startOrep(file, { OREP_RATE_LIMIT_RPS: '3' });
    behindProxy = await startOrep(file, { OREP_RATE_LIMIT_RPS: '3', TRUST_PROXY: '1' });
  });

  afterAll(async () => {
    await svc?.close();
    await behindProxy?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Ten at once, each naming another client in X-Forwarded-For (as a proxy would add it).
  const fromTenClients = (app: RunningApp) =>
    Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        post(`${app.url}/ofrep/v1/evaluate/flags/bool-flag`, { context: { targetingKey: 'u' } }, { authorization: `Bearer ${TOKEN}`, 'x-forwarded-for': `198.51.100.${i + 1}` }),
      ),
    );

  it('TRUST_PROXY=1: the fast path limits each X-Forwarded-For client on its own', async () => {
    expect((await fromTenClients(behindProxy)).map((r) => r.status)).toEqual(Array(10).fill(200));
  });

  it('TRUST_PROXY=0: a spoofed X-Forwarded-For does not escape the limit', async () => {
    expect((await fromTenClients(svc)).filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(4);
  });

  it('429 with Retry-After and no body once a client is over the limit; the seed endpoint says it as a problem', async () => {
    // Ten at once land in at most two one-second windows, so one window sees at least five: over 3.
    const burst = (path: string, body: unknown) => Promise.all(Array.from({ length: 10 }, () => post(`${svc.url}${path}`, body)));
    const ofrep = await burst('/ofrep/v1/evaluate/flags/bool-flag', { context: { targetingKey: 'u' } });
    const limited = ofrep.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(4);
    expect(ofrep.filter((r) => r.status === 200).length).toBeLessThanOrEqual(6);
    for (const r of limited) {
      expect(r.text).toBe('');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }

    const seed = await burst('/v1/flags/bool-flag/evaluate', { defaultValue: false, type: 'boolean', context: { targetingKey: 'u' } });
    const seedLimited = seed.filter((r) => r.status === 429);
    expect(seedLimited.length).toBeGreaterThanOrEqual(4);
    expect(seedLimited[0]!.body).toMatchObject({ type: '/problems/rate-limited', status: 429 });
    expect(seedLimited[0]!.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  });
});

describe('OFREP contexts: kinds, multi-kind contexts and segments from the flag file', () => {
  let dir: string;
  let svc: RunningApp;
  let client: Client;
  const segments = [
    { key: 'big-customers', name: 'Big customers', included: [], excluded: [], includedContexts: [{ contextKind: 'organization', values: ['acme'] }], excludedContexts: [], rules: [] },
  ];
  const flags: FlagDefinition[] = [
    {
      key: 'org-flag',
      type: 'boolean',
      defaultValue: false,
      variations: onOff,
      enabled: true,
      targets: [],
      rules: [
        { id: 'big', clauses: [{ attribute: '', op: 'segmentMatch', values: ['big-customers'] }], variationId: 'on' },
        { id: 'enterprise', clauses: [{ attribute: 'plan', op: 'in', values: ['enterprise'], contextKind: 'organization' }], variationId: 'on' },
      ],
      prerequisites: [],
    },
  ];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-kinds-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ version: 2, flags, segments }));
    svc = await startOrep(file);
    await OpenFeature.setProviderAndWait('orep-kinds', new OFREPProvider({ baseUrl: svc.url, headers: [['Authorization', `Bearer ${TOKEN}`]] }));
    client = OpenFeature.getClient('orep-kinds');
  });

  afterAll(async () => {
    await svc?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('through the npm provider: kind selects the kind, kind multi nests the kinds, and segments from the file match', async () => {
    // The segment lists organization acme: as a single-kind organization context, and inside a multi-kind one.
    expect(await client.getBooleanDetails('org-flag', false, { targetingKey: 'acme', kind: 'organization' })).toMatchObject({ value: true, flagMetadata: { ruleId: 'big' } });
    const multi = { kind: 'multi', user: { targetingKey: 'u-1' }, organization: { targetingKey: 'acme' } };
    expect(await client.getBooleanDetails('org-flag', false, multi)).toMatchObject({ value: true, flagMetadata: { ruleId: 'big' } });
    expect(await client.getBooleanDetails('org-flag', false, { ...multi, organization: { targetingKey: 'other', plan: 'enterprise' } })).toMatchObject({
      value: true,
      flagMetadata: { ruleId: 'enterprise' },
    });
    // A user with the same key or attributes is not the organization.
    expect(await client.getBooleanDetails('org-flag', true, { targetingKey: 'acme', plan: 'enterprise' })).toMatchObject({ value: false, reason: 'DEFAULT' });
  });

  it('400 INVALID_CONTEXT naming the field for a context that is no context; the bulk answer evaluates a multi-kind context', async () => {
    const one = `${svc.url}/ofrep/v1/evaluate/flags/org-flag`;
    const missingKey = await post(one, { context: { kind: 'multi', user: { targetingKey: 'u-1' }, organization: { plan: 'enterprise' } } });
    expect([missingKey.status, missingKey.body]).toEqual([400, { key: 'org-flag', errorCode: 'INVALID_CONTEXT', errorDetails: expect.stringMatching(/^context\.organization\.targetingKey /) }]);
    const nested = await post(one, { context: { kind: 'multi', multi: { targetingKey: 'x' } } });
    expect([nested.status, nested.body.errorCode, nested.body.errorDetails]).toEqual([400, 'INVALID_CONTEXT', expect.stringMatching(/^context\.multi /)]);
    const badKind = await post(`${svc.url}/ofrep/v1/evaluate/flags`, { context: { targetingKey: 'x', kind: 'kind' } });
    expect([badKind.status, badKind.body.errorCode, badKind.body.errorDetails]).toEqual([400, 'INVALID_CONTEXT', expect.stringMatching(/^context\.kind /)]);
    const bulk = await post(`${svc.url}/ofrep/v1/evaluate/flags`, { context: { kind: 'multi', user: { targetingKey: 'u-1' }, organization: { key: 'acme' } } });
    expect([bulk.status, bulk.body.flags]).toEqual([200, [expect.objectContaining({ key: 'org-flag', value: true })]]);
  });
});
