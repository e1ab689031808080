/**
 * Traces, as a platform team's collector receives them: the built gateway and management-api started
 * as processes with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a local OTLP/HTTP receiver, driven by the
 * `openai` client. One request's trace holds the incoming request, the Postgres and Redis calls, the
 * model call's GenAI span and its HTTP call to the provider, linked to the caller's `traceparent`; the
 * log lines of a request carry its trace id; without an endpoint no OpenTelemetry module is loaded.
 * orep-server and billing-worker: their incoming requests and Postgres statements, under their own names.
 * Needs the builds: `npx nx run-many -t build -p management-api,ai-gateway,orep-server,billing-worker`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { hashSecret } from '@flagship/oauth';
import { DATA_SOURCE } from '@flagship/persistence';
import { type BuiltProcess, type CollectedSpan, FakeOtlpCollector, FakeStripe, freePort, http, startBuiltProcess, waitFor } from '@flagship/testing';
import { type GatewayE2e, setUpGatewayE2e } from './testing/built-gateway.fixture';
import { createTenant, type Sql } from './testing/gateway.fixture';

const builtMain = (app: string) => join(__dirname, '..', '..', '..', `dist/apps/${app}/apps/${app}/src/main.js`);
const MANAGEMENT_API_MAIN = builtMain('management-api');
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;
const PROMPT = 'the secret recipe of the house';
const STRIPE_KEY = 'sk_test_tracing';

/** A caller's W3C trace context: the trace the request joins, and the span that is its parent. */
const callerContext = () => {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, traceparent: `00-${traceId}-${parentId}-01` };
};

describe('traces (OpenTelemetry over OTLP/HTTP)', () => {
  let e2e: GatewayE2e;
  let collector: FakeOtlpCollector;
  let stripe: FakeStripe;
  let ds: Sql;
  let gateway: BuiltProcess;
  let dir: string;
  let tenant: string;
  let token: string;

  /** A preload writing the modules the process had loaded when it exits (NODE_OPTIONS=--require). */
  const modulesReport = (name: string): { env: NodeJS.ProcessEnv; loaded: () => string[] } => {
    const out = join(dir, `${name}.json`);
    return {
      env: { NODE_OPTIONS: `--require ${join(dir, 'report-modules.js')}`, MODULES_REPORT: out },
      loaded: () => JSON.parse(readFileSync(out, 'utf8')) as string[],
    };
  };
  const stop = async (p: BuiltProcess): Promise<void> => {
    if (p.child.exitCode !== null) return;
    const exited = once(p.child, 'exit');
    p.child.kill('SIGTERM');
    await exited;
  };
  const openai = (g: BuiltProcess) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: token, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 20_000 });
  const otelEnv = (): NodeJS.ProcessEnv => ({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=e2e' });
  /** Waits until the trace holds a span matching `done`, then gives all of the trace's spans. */
  const traceOf = async (traceId: string, done: (s: CollectedSpan) => boolean): Promise<CollectedSpan[]> => {
    await waitFor(async () => collector.trace(traceId).some(done) || undefined, 10_000, 50);
    return collector.trace(traceId);
  };
  const one = (spans: CollectedSpan[], test: (s: CollectedSpan) => boolean, what: string): CollectedSpan => {
    const found = spans.filter(test);
    if (found.length !== 1) throw new Error(`expected one ${what}, found ${found.length} in ${JSON.stringify(spans.map((s) => s.name))}`);
    return found[0]!;
  };
  const isPg = (s: CollectedSpan) => s.attributes['db.system'] === 'postgresql' || s.attributes['db.system.name'] === 'postgresql';
  const isRedis = (s: CollectedSpan) => s.attributes['db.system'] === 'redis' || s.attributes['db.system.name'] === 'redis';
  /** Every span's parent is the caller's span or another span of the trace. */
  const expectLinked = (spans: CollectedSpan[], callerSpanId: string) => {
    const ids = new Set([callerSpanId, ...spans.map((s) => s.spanId)]);
    expect(spans.filter((s) => !ids.has(s.parentSpanId ?? '')).map((s) => s.name)).toEqual([]);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flagship-tracing-'));
    writeFileSync(
      join(dir, 'report-modules.js'),
      "process.on('exit', () => require('node:fs').writeFileSync(process.env.MODULES_REPORT, JSON.stringify(Object.keys(require.cache))));\n",
    );
    collector = await FakeOtlpCollector.start();
    stripe = await FakeStripe.start({ apiKey: STRIPE_KEY });
    e2e = await setUpGatewayE2e();
    ds = e2e.issuer.app.get<Sql>(DATA_SOURCE);
    tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
    token = await e2e.issue(tenant);
  }, 60_000);

  afterAll(async () => {
    await e2e?.close();
    await collector?.close();
    await stripe?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('the gateway with an OTLP endpoint', () => {
    const report = () => modulesReport('gateway-on');

    beforeAll(async () => {
      gateway = await e2e.startGateway({ ...otelEnv(), ...report().env });
    }, 60_000);

    it('a chat completion: one trace from the caller, with the server span, Postgres, Redis, and the GenAI span over the provider call', async () => {
      const caller = callerContext();
      const completion = await openai(gateway).chat.completions.create(
        { model: 'fake-chat-1', messages: [{ role: 'user', content: PROMPT }] },
        { headers: { traceparent: caller.traceparent } },
      );
      const spans = await traceOf(caller.traceId, (s) => s.name.startsWith('chat '));
      const server = one(spans, (s) => s.kind === SERVER, 'server span');
      // Named by its route (the lean router's), as the HTTP semantic conventions name server spans.
      expect(server).toMatchObject({ service: 'ai-gateway', parentSpanId: caller.parentId, name: 'POST /v1/chat/completions' });
      expect(server.attributes).toMatchObject({
        'http.request.method': 'POST',
        'http.route': '/v1/chat/completions',
        'http.response.status_code': 200,
        'url.path': '/v1/chat/completions',
      });

      const model = one(spans, (s) => s.name === 'chat fake-chat-1', 'model call span');
      expect(model).toMatchObject({ kind: CLIENT, parentSpanId: server.spanId, statusCode: 0 });
      expect(model.attributes).toEqual({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'fake-chat-1',
        'gen_ai.response.model': 'fake-chat-1',
        'gen_ai.response.id': completion.id,
        'gen_ai.usage.input_tokens': completion.usage!.prompt_tokens,
        'gen_ai.usage.output_tokens': completion.usage!.completion_tokens,
        'flagship.gateway.provider': 'inhouse',
        'flagship.gateway.usage_estimated': false,
      });
      // The provider layer's HTTP call (undici), inside the model call.
      const upstream = one(spans, (s) => s.parentSpanId === model.spanId, 'provider HTTP span');
      expect(upstream).toMatchObject({ kind: CLIENT, name: 'POST' });
      expect(upstream.attributes).toMatchObject({ 'url.full': `${e2e.fake.url}/chat/completions`, 'http.response.status_code': 200 });

      const pg = spans.filter(isPg);
      expect(pg.length).toBeGreaterThan(0);
      // The statements' text with placeholders, never their values (the tenant id is a parameter).
      expect(pg.every((s) => !JSON.stringify(s.attributes).includes(tenant))).toBe(true);
      expect(spans.filter(isRedis).length).toBeGreaterThan(0);
      expectLinked(spans, caller.parentId);
      // Neither the prompt nor the access token reaches the collector.
      const exported = JSON.stringify(collector.spans);
      expect(exported).not.toContain('secret recipe');
      expect(exported).not.toContain(token);
      expect(collector.refused).toEqual([]);
    });

    it('a stream: the GenAI span has the time to the first chunk and the stream usage', async () => {
      const caller = callerContext();
      e2e.fake.behave({ firstByteDelayMs: 150, chunkDelayMs: 20 });
      const stream = await openai(gateway).chat.completions.create(
        { model: 'fake-chat-1', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: PROMPT }] },
        { headers: { traceparent: caller.traceparent } },
      );
      let usage: OpenAI.CompletionUsage | undefined;
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        usage = chunk.usage ?? usage;
      }
      e2e.fake.reset();
      expect(text).toBe(`echo: ${PROMPT}`);
      const spans = await traceOf(caller.traceId, (s) => s.name.startsWith('chat '));
      const server = one(spans, (s) => s.kind === SERVER, 'server span');
      const model = one(spans, (s) => s.name === 'chat fake-chat-1', 'model call span');
      expect(model.parentSpanId).toBe(server.spanId);
      expect(model.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'fake-chat-1',
        'gen_ai.response.model': 'fake-chat-1',
        'gen_ai.usage.input_tokens': usage!.prompt_tokens,
        'gen_ai.usage.output_tokens': usage!.completion_tokens,
      });
      // Seconds, from the call to the first event: at least the provider's delay before its first byte.
      const ttfc = model.attributes['gen_ai.response.time_to_first_chunk'];
      expect(typeof ttfc).toBe('number');
      expect(ttfc).toBeGreaterThanOrEqual(0.15);
      expect(ttfc).toBeLessThan(5);
      expect(one(spans, (s) => s.parentSpanId === model.spanId, 'provider HTTP span').kind).toBe(CLIENT);
      expectLinked(spans, caller.parentId);
    });

    it('a provider failure: the GenAI span is an error with error.type', async () => {
      const caller = callerContext();
      e2e.fake.behave({ failure: { kind: 'status', status: 500 } });
      const err = await openai(gateway)
        .chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: PROMPT }] }, { headers: { traceparent: caller.traceparent } })
        .catch((e: unknown) => e);
      e2e.fake.reset();
      expect(err).toMatchObject({ status: 502 });
      const spans = await traceOf(caller.traceId, (s) => s.name.startsWith('chat '));
      const model = one(spans, (s) => s.name === 'chat fake-chat-1', 'model call span');
      expect(model.statusCode).toBe(ERROR);
      expect(model.attributes['error.type']).toBe('provider_error');
    });

    it('loads OpenTelemetry (the module check below can see it)', async () => {
      await stop(gateway);
      expect(report().loaded().some((m) => m.includes('/@opentelemetry/instrumentation-pg/'))).toBe(true);
    });
  });

  it('management-api: the request, its Postgres statements, and its log lines carrying the trace id', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    if (!existsSync(MANAGEMENT_API_MAIN)) throw new Error(`${MANAGEMENT_API_MAIN} is missing: run \`npx nx run management-api:build\` first`);
    const api = await startBuiltProcess(
      MANAGEMENT_API_MAIN,
      { ...e2e.te.env, ...otelEnv(), NODE_ENV: 'development', IDP_MODE: 'dev', LOG_LEVEL: 'info', PUBLIC_BASE_URL: url, OAUTH_ISSUER: url, OAUTH_AUDIENCE: 'flagship-api' },
      port,
    );
    try {
      const clientId = `ffc_trace${randomBytes(8).toString('hex')}`;
      const secret = `ffs_${randomBytes(24).toString('base64url')}`;
      await ds.query(`INSERT INTO oauth_clients (tenant_id, client_id, name, secret_hash, scopes, product_keys) VALUES ($1, $2, 'trace', $3, $4, $5)`, [
        tenant,
        clientId,
        await hashSecret(secret),
        ['ai:invoke'],
        ['core'],
      ]);
      const caller = callerContext();
      const res = await http<{ access_token: string }>(`${url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', traceparent: caller.traceparent },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).toString(),
      });
      expect(res.status).toBe(200);
      const spans = await traceOf(caller.traceId, (s) => s.kind === SERVER);
      const server = one(spans, (s) => s.kind === SERVER, 'server span');
      expect(server).toMatchObject({ service: 'management-api', parentSpanId: caller.parentId, name: 'POST /oauth/token' });
      expect(server.attributes['http.route']).toBe('/oauth/token');
      await waitFor(async () => collector.trace(caller.traceId).some(isPg) || undefined, 5000);
      const all = collector.trace(caller.traceId);
      expectLinked(all, caller.parentId);
      const exported = JSON.stringify(all);
      expect(exported).not.toContain(secret);
      expect(exported).not.toContain(res.body.access_token);
      // The request's access log line (pino-http) carries the trace.
      const lines = api
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { trace_id?: string; span_id?: string; req?: { url?: string } });
      const logged = lines.filter((l) => l.trace_id === caller.traceId);
      expect(logged.length).toBeGreaterThan(0);
      expect(logged.every((l) => all.some((s) => s.spanId === l.span_id))).toBe(true);

      // An OAuth redirect's code and state in a URL are redacted from the span.
      const redirect = callerContext();
      await http(`${url}/api/auth/callback?code=oauth-code-4242&state=state-4242&page=2`, { headers: { traceparent: redirect.traceparent } });
      const redirected = one(await traceOf(redirect.traceId, (s) => s.kind === SERVER), (s) => s.kind === SERVER, 'server span');
      expect(redirected.attributes['url.query']).toBe('code=REDACTED&state=REDACTED&page=2');
      expect(JSON.stringify(collector.spans)).not.toMatch(/oauth-code-4242|state-4242/);

      // An Express route with a parameter: the span has its template, never the id in the path.
      const byId = callerContext();
      const projectId = randomUUID();
      expect((await http(`${url}/api/projects/${projectId}`, { headers: { traceparent: byId.traceparent } })).status).toBe(401);
      const routed = one(await traceOf(byId.traceId, (s) => s.kind === SERVER), (s) => s.kind === SERVER, 'server span');
      expect(routed).toMatchObject({ name: 'GET /api/projects/:id', attributes: expect.objectContaining({ 'http.route': '/api/projects/:id' }) });
      // A path no route answers: the method alone, no route.
      const unknown = callerContext();
      expect((await http(`${url}/api/no-such/${projectId}`, { headers: { traceparent: unknown.traceparent } })).status).toBe(404);
      const unmatched = one(await traceOf(unknown.traceId, (s) => s.kind === SERVER), (s) => s.kind === SERVER, 'server span');
      expect(unmatched.name).toBe('GET');
      expect(unmatched.attributes['http.route']).toBeUndefined();
      expect(collector.spans.filter((s) => s.name.includes(projectId)).map((s) => s.name)).toEqual([]);
    } finally {
      await stop(api);
    }
  }, 60_000);

  it.each<[string, (port: number) => NodeJS.ProcessEnv, (url: string, traceparent: string) => Promise<number>]>([
    [
      'orep-server',
      (port) => ({ OREP_PORT: String(port), OREP_HOST: '127.0.0.1', OREP_AUTH_TOKEN: 'trace-token', OREP_TENANT_ID: tenant }),
      async (url, traceparent) =>
        (
          await http(`${url}/ofrep/v1/evaluate/flags`, {
            method: 'POST',
            headers: { authorization: 'Bearer trace-token', 'content-type': 'application/json', traceparent },
            body: '{"context":{"targetingKey":"u1"}}',
          })
        ).status,
    ],
    ['billing-worker', () => ({ STRIPE_SECRET_KEY: STRIPE_KEY, STRIPE_API_BASE: stripe.url }), async (url, traceparent) => (await http(`${url}/no-such-route`, { headers: { traceparent } })).status],
  ])("%s: its incoming request continues the caller's trace; its Postgres statements are exported under its name", async (app, env, request) => {
    const main = builtMain(app);
    if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx nx run ${app}:build\` first`);
    const port = await freePort();
    const before = collector.spans.length;
    const p = await startBuiltProcess(main, { ...e2e.te.env, ...otelEnv(), NODE_ENV: 'test', LOG_LEVEL: 'info', ...env(port) }, port);
    try {
      const caller = callerContext();
      expect(await request(p.url, caller.traceparent)).toBe(app === 'orep-server' ? 200 : 404);
      const server = one(await traceOf(caller.traceId, (s) => s.kind === SERVER), (s) => s.kind === SERVER, 'server span');
      expect(server).toMatchObject({ service: app, parentSpanId: caller.parentId });
      // orep-server's lean route by its template; billing-worker's unknown path by its method alone.
      expect(server.name).toBe(app === 'orep-server' ? 'POST /ofrep/v1/evaluate/flags' : 'GET');
      await waitFor(async () => collector.spans.slice(before).some((s) => s.service === app && isPg(s)) || undefined, 5000);
      if (app === 'billing-worker') {
        // Its start-up catch-up of Stripe events: a client span to Stripe, without the secret key the request carried.
        const toStripe = await waitFor(
          async () => collector.spans.slice(before).find((s) => s.service === app && s.kind === CLIENT && String(s.attributes['url.full']).startsWith(`${stripe.url}/v1/events`)),
          5000,
        );
        expect(toStripe.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.response.status_code': 200 });
        expect(JSON.stringify(collector.spans)).not.toContain(STRIPE_KEY);
      }
    } finally {
      await stop(p);
    }
  }, 60_000);

  describe("sampling: a caller's traceparent", () => {
    const N = 40;
    const RATIO = 0.25;
    /** Trace ids that a sampler deciding on the trace id takes at RATIO: what a caller who wants every request traced sends. */
    const chosenTraceIds = (): string[] => {
      const byTraceId = new TraceIdRatioBasedSampler(RATIO);
      const ids: string[] = [];
      while (ids.length < N) {
        const id = randomBytes(16).toString('hex');
        if (byTraceId.shouldSample(ROOT_CONTEXT, id).decision === SamplingDecision.RECORD_AND_SAMPLED) ids.push(id);
      }
      return ids;
    };
    const sampledParent = (traceId: string) => `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
    const traced = (traceIds: string[]) => traceIds.filter((id) => collector.trace(id).some((s) => s.kind === SERVER && s.service === 'ai-gateway'));

    it("by default, a caller's sampled flag and chosen trace ids buy no tracing: about the ratio of its requests is traced, each with all its spans", async () => {
      const g = await e2e.startGateway({ ...otelEnv(), OTEL_TRACES_SAMPLER_ARG: String(RATIO) });
      const ids = chosenTraceIds();
      for (const id of ids) {
        await openai(g).chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] }, { headers: { traceparent: sampledParent(id) } });
      }
      await stop(g); // exports what is still batched
      const sampled = traced(ids);
      // Binomial(40, 0.25): 10 on average; trusting the caller's flag (or deciding on its trace id) traces all 40.
      expect(sampled.length).toBeGreaterThan(0);
      expect(sampled.length).toBeLessThan(N * 0.6);
      // The spans inside a request follow its decision: a traced request has its model call, an untraced one nothing.
      expect(sampled.filter((id) => !collector.trace(id).some((s) => s.name === 'chat fake-chat-1'))).toEqual([]);
      expect(ids.filter((id) => !sampled.includes(id)).flatMap((id) => collector.trace(id).map((s) => s.name))).toEqual([]);
    }, 60_000);

    it("parentbased_traceidratio, set by an operator whose callers are trusted, keeps its standard meaning: the caller's flag decides", async () => {
      const g = await e2e.startGateway({ ...otelEnv(), OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
      const before = collector.spans.length;
      const ids = Array.from({ length: 10 }, () => randomBytes(16).toString('hex'));
      const models = async (traceparent?: string) =>
        (await http(`${g.url}/v1/models`, { headers: { authorization: `Bearer ${token}`, ...(traceparent === undefined ? {} : { traceparent }) } })).status;
      for (const id of ids) expect(await models(sampledParent(id))).toBe(200);
      expect(await models()).toBe(200); // a new trace: ratio 0
      await stop(g);
      expect(traced(ids)).toEqual(ids);
      expect(collector.spans.slice(before).filter((s) => s.kind === SERVER && s.service === 'ai-gateway' && !ids.includes(s.traceId))).toEqual([]);
    }, 60_000);
  });

  it('without an endpoint, no OpenTelemetry module is loaded, and a request is served all the same', async () => {
    const report = modulesReport('gateway-off');
    const off = await e2e.startGateway({ ...report.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' });
    const before = collector.spans.length;
    const completion = await openai(off).chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    await stop(off);
    const loaded = report.loaded();
    expect(loaded.some((m) => m.includes('/openai-compatible.providers.js'))).toBe(true);
    // Only the API's no-op facade, which prom-client loads for its exemplars in every process; no
    // SDK, exporter or instrumentation (nothing patches pg, ioredis, http or undici).
    expect(loaded.filter((m) => m.includes('/@opentelemetry/') && !m.includes('/@opentelemetry/api/'))).toEqual([]);
    expect(collector.spans.length).toBe(before);
  }, 60_000);
});
