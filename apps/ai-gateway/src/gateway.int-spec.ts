import OpenAI, { APIError, APIUserAbortError, AuthenticationError, BadRequestError, NotFoundError, PermissionDeniedError, RateLimitError } from 'openai';
import type { DataSource } from 'typeorm';
import { ClientRevocations } from '@flagship/oauth';
import { DATA_SOURCE } from '@flagship/persistence';
import { LowBalanceRepository } from '@flagship/ledger';
import { CHANNELS, type LowBalance, PUBSUB, type PubSub } from '@flagship/redis';
import type { RunningApp } from '@flagship/service-kit';
import { FakeModelUpstream, http, type TestEnvironment, waitFor } from '@flagship/testing';
import type { GatewayPipeline } from './gateway.pipeline';
import { balanceOf, createTenant, type GatewayIntegration, type IssueToken, ledgerRows, startGateway, startGatewayIntegration, startIssuer, TEST_ISSUER as ISSUER } from './testing/gateway.fixture';

/**
 * The gateway through the real `openai` SDK (what product backends use), over real HTTP, with a real
 * Postgres and Redis and the fake model upstream as the `inhouse` provider. Tokens are ES256 access
 * tokens of this service, issued by libs/oauth against the same database, as management-api issues them.
 */

/** fake-chat-1 in the built-in catalogue: 1,000 micro-credits per 1,000 input tokens, 2,000 per 1,000 output. */
const cost = (input: number, output: number) => Math.ceil((input * 1000 + output * 2000) / 1000);

describe('ai-gateway through the openai SDK', () => {
  let te: TestEnvironment;
  let fake: FakeModelUpstream;
  let issuer: RunningApp;
  let issue: IssueToken;
  let gw: RunningApp & { pipeline: GatewayPipeline };
  let ds: DataSource;
  /** Billable, entitled for core, with credit. */
  let billable: string;

  let setup: GatewayIntegration | undefined;

  beforeAll(async () => {
    setup = await startGatewayIntegration({ PROVIDER_FIRST_BYTE_TIMEOUT_MS: '400', PROVIDER_BREAKER_FAILURES: '1000', GATEWAY_RATE_LIMIT_TPM: '50000' });
    ({ te, fake, issuer, issue, gw } = setup);
    ds = gw.app.get<DataSource>(DATA_SOURCE);
    billable = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
  });

  afterAll(() => setup?.close());

  beforeEach(() => fake.reset());

  const sdk = async (tenantId: string, headers: Record<string, string> = { 'x-service-product-key': 'core' }, productKeys?: string[]) =>
    new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(tenantId, productKeys), defaultHeaders: headers, maxRetries: 0, timeout: 10_000 });

  /** Settlement is written after the answer, batched: wait for it before reading the ledger. */
  const settled = () => gw.pipeline.drain();

  const chat = { model: 'fake-chat-1', messages: [{ role: 'system' as const, content: 'be brief' }, { role: 'user' as const, content: 'hello there world' }] };

  it('chat: an OpenAI completion, one succeeded row with tokens and debit, the balance down by exactly the debit', async () => {
    const before = await balanceOf(ds, billable);
    const client = await sdk(billable);
    const { data, response } = await client.chat.completions.create(chat).withResponse();
    expect(data.choices[0]!.message.content).toBe('echo: hello there world');
    expect(data.usage).toEqual({ prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
    expect(response.headers.get('x-request-id')).toEqual(expect.any(String));
    expect(Number(response.headers.get('x-gateway-overhead-ms'))).toBeGreaterThanOrEqual(0);
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('6000');
    expect(Number(response.headers.get('x-ratelimit-remaining-requests'))).toBeLessThan(6000);
    expect(response.headers.get('x-ratelimit-reset-tokens')).toMatch(/^\d+s$/);
    await settled();
    const rows = (await ledgerRows(ds, billable)).filter((r) => r.request_id === response.headers.get('x-request-id'));
    expect(rows).toEqual([
      expect.objectContaining({
        status: 'succeeded',
        product_key: 'core',
        provider: 'inhouse',
        model: 'fake-chat-1',
        endpoint: 'chat.completions',
        input_tokens: 5,
        output_tokens: 4,
        debit: String(cost(5, 4)),
        zero_rated: false,
        usage_estimated: false,
      }),
    ]);
    expect(Number(rows[0]!.reserved)).toBeGreaterThanOrEqual(cost(5, 4));
    expect(await balanceOf(ds, billable)).toEqual({ balance: before.balance - cost(5, 4), reserved: 0 });
  });

  it('holds the estimate on a pending row while the provider works, then settles it', async () => {
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
    fake.behave({ firstByteDelayMs: 300 });
    const answer = (await sdk(tenant)).chat.completions.create({ ...chat, max_tokens: 10 });
    const [pending] = await waitFor(async () => {
      const rows = await ledgerRows(ds, tenant);
      return rows.length === 1 ? rows : undefined;
    }, 3000, 10);
    expect(pending).toMatchObject({ status: 'pending', debit: '0', input_tokens: 0, provider: 'inhouse', requested_provider: 'inhouse' });
    const held = Number(pending!.reserved);
    expect(held).toBeGreaterThanOrEqual(cost(5, 10));
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 100_000, reserved: held });
    // Stamped "upstream called" while the provider works (the reconciler would charge the estimate).
    await waitFor(async () => Boolean((await ledgerRows(ds, tenant))[0]?.upstream_called_at), 3000, 10);
    // And counted in flight, for an autoscaler.
    const inFlight = async () => Number(/^gateway_requests_in_flight(?:\{[^}]*\})? (\d+)$/m.exec((await http(`${gw.metricsUrl}/metrics`)).text)?.[1]);
    expect(await inFlight()).toBe(1);
    await answer;
    await settled();
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 100_000 - cost(5, 4), reserved: 0 });
    expect(await inFlight()).toBe(0);
  });

  it('passes every field it does not validate to the provider untouched', async () => {
    const client = await sdk(billable);
    const tools = [{ type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }];
    await client.chat.completions.create({ ...chat, temperature: 0.25, seed: 7, user: 'u-1', tools, tool_choice: 'auto', response_format: { type: 'text' } });
    expect(fake.lastBody.chat).toMatchObject({ temperature: 0.25, seed: 7, user: 'u-1', tools, tool_choice: 'auto', response_format: { type: 'text' } });
  });

  it('streaming: chunks as they come, usage recorded on one succeeded row', async () => {
    const client = await sdk(billable);
    const stream = await client.chat.completions.create({ ...chat, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('echo: hello there world');
    expect(usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 4 });
    await settled();
    const [row] = (await ledgerRows(ds, billable)).filter((r) => r.stream);
    expect(row).toMatchObject({ status: 'succeeded', input_tokens: 5, output_tokens: 4, debit: String(cost(5, 4)), usage_estimated: false });
  });

  it('embeddings: a string or an array of inputs', async () => {
    const client = await sdk(billable);
    const one = await client.embeddings.create({ model: 'fake-embed-1', input: 'hello world' });
    expect(one.data).toHaveLength(1);
    expect(one.data[0]!.embedding).toHaveLength(8);
    const many = await client.embeddings.create({ model: 'fake-embed-1', input: ['a b', 'c d e'] });
    expect(many.data.map((d) => d.index)).toEqual([0, 1]);
    await settled();
    const rows = (await ledgerRows(ds, billable)).filter((r) => r.endpoint === 'embeddings');
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.status === 'succeeded' && r.input_tokens > 0 && Number(r.debit) > 0)).toBe(true);
  });

  it('models: the configured catalogue with each model\'s provider', async () => {
    const client = await sdk(billable);
    const ids: Array<{ id: string; owned_by: string }> = [];
    for await (const m of client.models.list()) ids.push({ id: m.id, owned_by: m.owned_by });
    expect(ids).toEqual(expect.arrayContaining([{ id: 'fake-chat-1', owned_by: 'inhouse' }, { id: 'fake-embed-1', owned_by: 'inhouse' }]));
  });

  describe("every error of CONTRACT.md's table, as the SDK's typed error", () => {
    const expectError = async (call: Promise<unknown>, type: new (...args: never[]) => APIError, status: number, code: string) => {
      const err = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(type);
      expect(err).toMatchObject({ status, code });
      return err as APIError;
    };

    it('401 invalid_token: a missing, forged or foreign token', async () => {
      const forged = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'not-a-jwt', defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
      await expectError(forged.chat.completions.create(chat), AuthenticationError, 401, 'invalid_token');
      const none = await http(`${gw.url}/v1/chat/completions`, { method: 'POST', json: chat, headers: { 'x-service-product-key': 'core' } });
      expect(none.status).toBe(401);
      expect(none.body).toEqual({ error: { message: expect.any(String), type: 'authentication_error', code: 'invalid_token', param: null } });
      expect(fake.calls.chat).toBe(0);
    });

    it('403 insufficient_scope: a token of a client made with flags:read (or no scope) cannot spend credits; with ai:invoke it can', async () => {
      const before = await balanceOf(ds, billable);
      const rowsBefore = (await ledgerRows(ds, billable)).length;
      const asClient = async (scopes: string[]) =>
        new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(billable, ['core'], undefined, scopes), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
      for (const scopes of [['flags:read'], [], ['flags:read', 'flags:write', 'flags:evaluate', 'projects:read', 'projects:write']]) {
        const client = await asClient(scopes);
        const err = await expectError(client.chat.completions.create(chat), PermissionDeniedError, 403, 'insufficient_scope');
        expect(err.error).toEqual({ message: expect.stringContaining('ai:invoke'), type: 'permission_error', code: 'insufficient_scope', param: null });
        await expectError(client.embeddings.create({ model: 'fake-embed-1', input: 'x' }), PermissionDeniedError, 403, 'insufficient_scope');
        await expectError(client.models.list(), PermissionDeniedError, 403, 'insufficient_scope');
      }
      await settled();
      expect(fake.calls.chat + fake.calls.embeddings).toBe(0);
      expect(await ledgerRows(ds, billable)).toHaveLength(rowsBefore);
      expect(await balanceOf(ds, billable)).toEqual(before);
      await expect((await asClient(['flags:read', 'ai:invoke'])).chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
    });

    it("403 product_not_allowed: the own product core outside a client's allow-list; an empty allow-list leaves core open", async () => {
      await expectError((await sdk(billable, { 'x-service-product-key': 'core' }, ['insights'])).chat.completions.create(chat), PermissionDeniedError, 403, 'product_not_allowed');
      expect(fake.calls.chat).toBe(0);
      await expect((await sdk(billable, { 'x-service-product-key': 'core' }, [])).chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
      await expect((await sdk(billable, { 'x-service-product-key': 'core' }, ['insights', 'core'])).chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
    });

    it('400 missing / unknown / legacy product key', async () => {
      await expectError((await sdk(billable, {})).chat.completions.create(chat), BadRequestError, 400, 'missing_product_key');
      await expectError((await sdk(billable, { 'x-service-product-key': 'nope' })).chat.completions.create(chat), BadRequestError, 400, 'unknown_product_key');
      const legacy = await expectError(
        (await sdk(billable, { 'x-service-product-key': 'partner_portal' }, ['partner_portal'])).chat.completions.create(chat),
        BadRequestError,
        400,
        'legacy_product_key',
      );
      expect(legacy.param).toBe('x-service-product-key');
    });

    it('400 unsupported_provider', async () => {
      await expectError(
        (await sdk(billable, { 'x-service-product-key': 'core', 'x-service-provider': 'azure' })).chat.completions.create(chat),
        BadRequestError,
        400,
        'unsupported_provider',
      );
    });

    it('403 product_not_allowed: an internal product key outside the client allow-list', async () => {
      await expectError((await sdk(billable, { 'x-service-product-key': 'insights' }, ['core'])).chat.completions.create(chat), PermissionDeniedError, 403, 'product_not_allowed');
    });

    it('403 entitlement_required: no enterprise entitlement, an expired one, or another product\'s', async () => {
      const none = await createTenant(ds, { balance: 100_000 });
      await expectError((await sdk(none)).chat.completions.create(chat), PermissionDeniedError, 403, 'entitlement_required');
      const expired = await createTenant(ds, { balance: 100_000, entitlements: [{ productKey: 'core', tier: 'enterprise', validUntil: new Date(Date.now() - 1000) }] });
      await expectError((await sdk(expired)).chat.completions.create(chat), PermissionDeniedError, 403, 'entitlement_required');
      const premium = await createTenant(ds, { balance: 100_000, plan: 'premium' });
      await expect((await sdk(premium)).chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
      const suite = await createTenant(ds, { balance: 100_000, entitlements: [{ productKey: 'core', tier: 'enterprise_plus_suite' }] });
      await expect((await sdk(suite)).chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
      expect(fake.calls.chat).toBe(2);
    });

    it('403 provider_restricted: hosted for a tenant that is not allowed it', async () => {
      await expectError(
        (await sdk(billable, { 'x-service-product-key': 'core', 'x-service-provider': 'hosted' })).chat.completions.create(chat),
        PermissionDeniedError,
        403,
        'provider_restricted',
      );
    });

    it('402 insufficient_credits, before the provider is called', async () => {
      const broke = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 0 });
      const noRow = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }] });
      for (const tenant of [broke, noRow]) {
        const err = await expectError((await sdk(tenant)).chat.completions.create(chat), APIError, 402, 'insufficient_credits');
        expect(err.type).toBe('insufficient_quota');
        // Where to buy credits: the console's billing page, at management-api's address (OAUTH_ISSUER by default).
        expect(err.message).toContain(`buy credits at ${ISSUER}/console/billing`);
        await expectError((await sdk(tenant)).chat.completions.create({ ...chat, stream: true }), APIError, 402, 'insufficient_credits');
      }
      expect(fake.calls.chat).toBe(0);
      expect(await ledgerRows(ds, broke)).toEqual([]);
    });

    it('429 rate_limited with retry-after and the x-ratelimit headers; the reservation made meanwhile is taken back', async () => {
      const limited = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
      const client = await sdk(limited);
      const err = await expectError(client.chat.completions.create({ ...chat, max_tokens: 60_000 }), RateLimitError, 429, 'rate_limited');
      expect(Number(err.headers?.get('retry-after'))).toBeGreaterThan(0);
      // Refused, its tokens were given back: the client's window is whole (this file's 50,000).
      expect(err.headers?.get('x-ratelimit-remaining-tokens')).toBe('50000');
      expect(fake.calls.chat).toBe(0);
      // The rate limit and the reservation run at the same time: a refused request leaves no row and holds no credit.
      await settled();
      expect(await ledgerRows(ds, limited)).toEqual([]);
      expect(await balanceOf(ds, limited)).toEqual({ balance: 1_000_000, reserved: 0 });
    });

    it('503 provider_unavailable, 502 provider_error, 504 provider_timeout; each leaves a failed row, with debit 0 but for the time-out after sending', async () => {
      const hostedOk = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000, hostedProviderAllowed: true });
      // No PROVIDER_HOSTED_URL here: hosted is unconfigured.
      await expectError(
        (await sdk(hostedOk, { 'x-service-product-key': 'core', 'x-service-provider': 'hosted' })).chat.completions.create(chat),
        APIError,
        503,
        'provider_unavailable',
      );
      const client = await sdk(billable);
      fake.failNext({ kind: 'status', status: 500, body: { error: { message: 'boom' } } });
      await expectError(client.chat.completions.create(chat), APIError, 502, 'provider_error');
      fake.behave({ firstByteDelayMs: 1500 });
      await expectError(client.chat.completions.create(chat), APIError, 504, 'provider_timeout');
      fake.reset();
      await settled();
      const failed = (await ledgerRows(ds, hostedOk)).concat((await ledgerRows(ds, billable)).filter((r) => r.status === 'failed'));
      expect(failed.map((r) => r.error_code).sort()).toEqual(['provider_error', 'provider_timeout', 'provider_unavailable']);
      // The time-out came after the request was sent: the provider had it, so its input is paid for (estimated).
      expect(failed.filter((r) => r.error_code !== 'provider_timeout').every((r) => r.debit === '0')).toBe(true);
      expect((await balanceOf(ds, hostedOk)).reserved).toBe(0);
    });

    it('OpenAI bodies for malformed JSON, oversize, wrong content type, unknown /v1 routes and wrong methods', async () => {
      const token = await issue(billable);
      const headers = { authorization: `Bearer ${token}`, 'x-service-product-key': 'core' };
      const post = (path: string, body: string, contentType = 'application/json') =>
        http(`${gw.url}${path}`, { method: 'POST', body, headers: { ...headers, 'content-type': contentType } });
      const shape = (code: string) => ({ error: { message: expect.any(String), type: expect.any(String), code, param: null } });

      const malformed = await post('/v1/chat/completions', '{"model": ');
      expect([malformed.status, malformed.body]).toEqual([400, shape('invalid_json')]);
      const oversize = await post('/v1/chat/completions', JSON.stringify({ ...chat, pad: 'x'.repeat(1024 * 1024) }));
      expect([oversize.status, oversize.body]).toEqual([413, shape('request_too_large')]);
      const form = await post('/v1/embeddings', 'model=fake-embed-1', 'application/x-www-form-urlencoded');
      expect([form.status, form.body]).toEqual([415, shape('unsupported_media_type')]);
      const deep = await post('/v1/chat/completions', `{"model":"fake-chat-1","messages":${'['.repeat(100)}${']'.repeat(100)}}`);
      expect([deep.status, deep.body]).toEqual([400, shape('invalid_request')]);
      const noMessages = await post('/v1/chat/completions', JSON.stringify({ model: 'fake-chat-1', messages: [{ role: 'wizard', content: 'x' }] }));
      expect(noMessages.status).toBe(400);
      expect(noMessages.body).toMatchObject({ error: { code: 'invalid_request', param: 'messages[0].role' } });
      const badStream = await post('/v1/chat/completions', JSON.stringify({ ...chat, stream: 'yes' }));
      expect(badStream.body).toMatchObject({ error: { code: 'invalid_request', param: 'stream' } });
      // What the reservation reads: n and the output limits must be positive integers (n at most 128).
      for (const [field, value] of [['n', 0], ['n', 129], ['max_tokens', -5], ['max_completion_tokens', 'lots']] as const) {
        const refused = await post('/v1/chat/completions', JSON.stringify({ ...chat, [field]: value }));
        expect([refused.status, refused.body]).toEqual([400, { error: expect.objectContaining({ code: 'invalid_request', param: field }) }]);
      }
      const unknownModel = await post('/v1/chat/completions', JSON.stringify({ ...chat, model: 'gpt-17' }));
      expect([unknownModel.status, unknownModel.body]).toEqual([404, { error: expect.objectContaining({ code: 'model_not_found', param: 'model' }) }]);

      const client = await sdk(billable);
      await expectError(client.get('/no-such-route'), NotFoundError, 404, 'unknown_url');
      const bare = await http(`${gw.url}/v1`, { headers });
      expect([bare.status, bare.body]).toEqual([404, { error: { message: expect.any(String), type: 'invalid_request_error', code: 'unknown_url', param: null } }]);
      const wrongMethod = await http(`${gw.url}/v1/chat/completions`, { headers });
      expect([wrongMethod.status, wrongMethod.headers.get('allow'), wrongMethod.body]).toEqual([405, 'POST', shape('method_not_allowed')]);
      expect(wrongMethod.headers.get('x-request-id')).toEqual(expect.any(String));
      expect(wrongMethod.headers.get('x-gateway-overhead-ms')).toEqual(expect.any(String));
      expect(fake.calls.chat + fake.calls.embeddings).toBe(0);
      // Nest still answers the platform routes.
      expect((await http(`${gw.url}/healthz`)).status).toBe(200);
    });
  });

  it('rate limits per tenant too: two clients of one tenant together are refused past its plan\'s limit, another tenant is not', async () => {
    const limited = await startGateway(te, {
      OAUTH_ISSUER: ISSUER,
      PROVIDER_INHOUSE_URL: fake.url,
      GATEWAY_TENANT_RATE_LIMIT_RPM: 'free=4,standard=100',
    });
    try {
      const free = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
      const standard = await createTenant(ds, { plan: 'standard', entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
      const client = async (tenant: string) =>
        new OpenAI({ baseURL: `${limited.url}/v1`, apiKey: await issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
      const [a, b, other] = [await client(free), await client(free), await client(standard)];
      const outcome = (c: OpenAI) => c.chat.completions.create(chat).then(() => 'ok', (e: { status?: number; code?: string }) => `${e.status} ${e.code}`);
      const results = [];
      for (let i = 0; i < 3; i++) results.push(await outcome(a), await outcome(b));
      // Each client made 3 requests (far under its own 6,000): the tenant's 4 are spent by both together.
      expect(results).toEqual(['ok', 'ok', 'ok', 'ok', '429 rate_limited', '429 rate_limited']);
      const refused = await a.chat.completions.create(chat).catch((e: APIError) => e);
      expect(refused).toBeInstanceOf(RateLimitError);
      expect((refused as APIError).message).toMatch(/for this tenant/);
      expect(Number((refused as APIError).headers?.get('retry-after'))).toBeGreaterThan(0);
      for (let i = 0; i < 6; i++) expect(await outcome(other)).toBe('ok');
      await limited.pipeline.drain();
      // A refused request leaves no row and holds nothing.
      expect(await ledgerRows(ds, free)).toHaveLength(4);
      expect((await balanceOf(ds, free)).reserved).toBe(0);
    } finally {
      await limited.close();
    }
  });

  describe('admission: the credit left must cover the whole estimate', () => {
    it('a balance of 1 micro-credit and a 20,000-token request: 402 insufficient_credits, the provider not called, no row', async () => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1 });
      // 2,000 words in, up to 18,000 out (under this file's 50,000-token rate limit).
      const big = { model: 'fake-chat-1', max_tokens: 18_000, messages: [{ role: 'user' as const, content: 'word '.repeat(2_000) }] };
      await expect((await sdk(tenant)).chat.completions.create(big)).rejects.toMatchObject({ status: 402, code: 'insufficient_credits' });
      await expect((await sdk(tenant)).chat.completions.create({ ...big, stream: true })).rejects.toMatchObject({ status: 402, code: 'insufficient_credits' });
      expect(fake.calls.chat).toBe(0);
      await settled();
      expect(await ledgerRows(ds, tenant)).toEqual([]);
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 1, reserved: 0 });
    });

    it('the upstream is asked for no more output than was reserved: max_tokens x n', async () => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
      const client = await sdk(tenant);
      await client.chat.completions.create(chat);
      expect(fake.lastBody.chat).toMatchObject({ max_completion_tokens: 1024 });
      fake.behave({ firstByteDelayMs: 300 });
      const answer = client.chat.completions.create({ ...chat, max_tokens: 100, n: 3 });
      const pending = await waitFor(async () => (await ledgerRows(ds, tenant)).find((r) => r.status === 'pending'), 3000, 10);
      // 300 output tokens at 2,000 per 1,000 are held, besides the input's bound.
      expect(Number(pending.reserved)).toBeGreaterThan(cost(0, 300));
      await answer;
      expect(fake.lastBody.chat).toMatchObject({ max_tokens: 100, n: 3 });
    });

    it('a burst of concurrent requests, each from its own client, leaves the balance above minus one request\'s cost', async () => {
      const start = 10_000;
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: start });
      // 500 prompt tokens and up to 501 output tokens a request (the fake's words): each really costs about 1,500.
      const body = { model: 'fake-chat-1', max_tokens: 600, messages: [{ role: 'user' as const, content: 'a '.repeat(500).trim() }] };
      const clients = await Promise.all(Array.from({ length: 30 }, () => sdk(tenant)));
      fake.behave({ firstByteDelayMs: 50 });
      const outcomes = await Promise.all(clients.map((c) => c.chat.completions.create(body).then(() => 'ok', (e: { code?: string }) => e.code)));
      await settled();
      const served = outcomes.filter((o) => o === 'ok').length;
      expect(served).toBeGreaterThan(0);
      expect(outcomes.filter((o) => o !== 'ok').every((o) => o === 'insufficient_credits')).toBe(true);
      const rows = await ledgerRows(ds, tenant);
      const debits = rows.reduce((sum, r) => sum + Number(r.debit), 0);
      const maxCost = Math.max(...rows.map((r) => Number(r.reserved)));
      const { balance, reserved } = await balanceOf(ds, tenant);
      expect(reserved).toBe(0);
      expect(start - balance).toBe(debits);
      expect(balance).toBeGreaterThanOrEqual(-maxCost);
      expect(fake.calls.chat).toBe(served);
    });
  });

  describe('prices with provenance: cached input tokens', () => {
    // 1,002 prompt tokens (the fake counts words): 'be brief' and 1,000 words; the reply is cut to 10.
    const long = { messages: [{ role: 'system' as const, content: 'be brief' }, { role: 'user' as const, content: Array(1000).fill('word').join(' ') }], max_tokens: 10 };
    const PROMPT = 1002;
    const CACHED = 600;
    const OUTPUT = 10;
    /** gpt-4o-mini in the built-in catalogue: 150 per 1,000 input tokens, 75 per 1,000 cached ones, 600 per 1,000 output. */
    const miniCost = (input: number, cached: number, output: number) => Math.ceil(((input - cached) * 150 + cached * 75 + output * 600) / 1000);

    /** One request of `body` from a tenant of its own; its row once settled, and what it took from the balance. */
    const paid = async (body: OpenAI.ChatCompletionCreateParamsNonStreaming | OpenAI.ChatCompletionCreateParamsStreaming) => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      const client = await sdk(tenant);
      let usage: OpenAI.CompletionUsage | null | undefined;
      if (body.stream) {
        for await (const chunk of await client.chat.completions.create(body)) if (chunk.usage) usage = chunk.usage;
      } else {
        usage = (await client.chat.completions.create(body)).usage;
      }
      await settled();
      const rows = await ledgerRows(ds, tenant);
      expect(rows).toHaveLength(1);
      const { balance, reserved } = await balanceOf(ds, tenant);
      expect(reserved).toBe(0);
      return { row: rows[0]!, usage, spent: 100_000 - balance };
    };

    it.each([false, true])('stream %s: cached tokens are charged at cachedInputPer1k, the rest at inputPer1k, never twice; the row records prices and cached tokens', async (stream) => {
      fake.behave({ cachedPromptTokens: CACHED });
      const { row, usage, spent } = await paid(
        stream ? { ...long, model: 'gpt-4o-mini', stream: true, stream_options: { include_usage: true } } : { ...long, model: 'gpt-4o-mini' },
      );
      // The client sees the provider's usage as it was sent.
      expect(usage).toMatchObject({ prompt_tokens: PROMPT, completion_tokens: OUTPUT, prompt_tokens_details: { cached_tokens: CACHED } });
      const expected = miniCost(PROMPT, CACHED, OUTPUT); // 112: (402 x 150 + 600 x 75 + 10 x 600) / 1,000, rounded up once
      expect(expected).toBeLessThan(miniCost(PROMPT, 0, OUTPUT)); // below the all-uncached price (a cached price ignored)...
      expect(expected).toBeLessThan(miniCost(PROMPT + CACHED, CACHED, OUTPUT)); // ...and below cached tokens charged on top of the prompt
      expect(row).toMatchObject({
        status: 'succeeded', stream, usage_estimated: false,
        input_tokens: PROMPT, output_tokens: OUTPUT, cached_tokens: CACHED,
        input_per_1k: '150', output_per_1k: '600', cached_input_per_1k: '75',
        debit: String(expected),
      });
      expect(spent).toBe(expected);
    });

    it('a model without cachedInputPer1k charges every prompt token at inputPer1k, cached or not, and still records the cached count', async () => {
      fake.behave({ cachedPromptTokens: CACHED });
      const { row, spent } = await paid({ ...long, model: 'fake-chat-1' });
      expect(row).toMatchObject({ input_tokens: PROMPT, cached_tokens: CACHED, input_per_1k: '1000', output_per_1k: '2000', cached_input_per_1k: null, debit: String(cost(PROMPT, OUTPUT)) });
      expect(spent).toBe(cost(PROMPT, OUTPUT));
    });

    it('no cached tokens reported: all at inputPer1k, cached_tokens 0, the prices still recorded', async () => {
      const { row, spent } = await paid({ ...long, model: 'gpt-4o-mini' });
      expect(row).toMatchObject({ input_tokens: PROMPT, cached_tokens: 0, input_per_1k: '150', output_per_1k: '600', cached_input_per_1k: '75', debit: String(miniCost(PROMPT, 0, OUTPUT)) });
      expect(spent).toBe(miniCost(PROMPT, 0, OUTPUT));
    });
  });

  describe('low-balance alerts', () => {
    it('concurrent requests taking the balance below the threshold: one crossing recorded, published once with its typed payload after it commits', async () => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      await new LowBalanceRepository(ds).set(tenant, 99_900);
      const heard: LowBalance[] = [];
      const pubsub = gw.app.get<PubSub>(PUBSUB);
      const stop = await pubsub.subscribe(CHANNELS.lowBalance, (m) => {
        if (m.tenantId === tenant) heard.push(m);
      });
      try {
        // 20 requests at once (each costs cost(5, 4) = 13): the balance falls from 100,000 to 99,740.
        const clients = await Promise.all(Array.from({ length: 20 }, () => sdk(tenant)));
        await Promise.all(clients.map((c) => c.chat.completions.create({ ...chat, max_tokens: 10 })));
        await settled();
        expect(await balanceOf(ds, tenant)).toEqual({ balance: 100_000 - 20 * cost(5, 4), reserved: 0 });
        const recorded = await new LowBalanceRepository(ds).crossings(tenant, { limit: 10 });
        expect(recorded).toHaveLength(1);
        expect(recorded[0]!.threshold).toBe(99_900);
        expect(recorded[0]!.balance).toBeLessThanOrEqual(99_900);
        const c = recorded[0]!;
        await waitFor(async () => (heard.length > 0 ? heard : undefined), 3000, 10);
        // Give a duplicate the time to arrive before asserting there is none.
        await new Promise((r) => setTimeout(r, 100));
        expect(heard).toEqual([{ tenantId: tenant, crossingId: c.id, threshold: 99_900, balance: c.balance, crossedAt: c.crossedAt }]);
      } finally {
        await stop();
      }
    });
  });

  describe('zero-rating', () => {
    it('an internal suite product in the allow-list is served, recorded with debit 0 and the reason, and reserves nothing', async () => {
      const tenant = await createTenant(ds, { balance: 0 });
      const client = await sdk(tenant, { 'x-service-product-key': 'insights' }, ['insights']);
      await expect(client.chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
      await settled();
      expect(await ledgerRows(ds, tenant)).toEqual([
        expect.objectContaining({ status: 'succeeded', product_key: 'insights', zero_rated: true, zero_rated_reason: 'internal_product', debit: '0', reserved: '0', input_tokens: 5 }),
      ]);
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 0, reserved: 0 });
    });

    it('a tenant flagged zeroRated is served without credit, debit 0 with the reason', async () => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], zeroRated: true });
      await (await sdk(tenant)).embeddings.create({ model: 'fake-embed-1', input: 'free text' });
      await settled();
      expect(await ledgerRows(ds, tenant)).toEqual([expect.objectContaining({ status: 'succeeded', zero_rated_reason: 'tenant_zero_rated', debit: '0' })]);
    });
  });

  it('a client that disconnects mid-stream leaves a completed row with the tokens delivered', async () => {
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
    const client = await sdk(tenant);
    fake.behave({ chunkDelayMs: 100 });
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'fake-chat-1', stream: true, messages: [{ role: 'user', content: words }] }, { signal: controller.signal });
    let received = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) received++;
      if (received === 3) {
        controller.abort(); // the SDK closes the connection
        break;
      }
    }
    expect(received).toBe(3);
    await waitFor(async () => ((await ledgerRows(ds, tenant))[0]?.status ?? 'pending') !== 'pending', 8000);
    await settled();
    const [row] = await ledgerRows(ds, tenant);
    // The rest of the stream was read after the client left, to its usage chunk: the whole answer is billed.
    expect(row).toMatchObject({ status: 'succeeded', error_code: 'client_disconnected', usage_estimated: false, input_tokens: 30, output_tokens: 31 });
    const { balance, reserved } = await balanceOf(ds, tenant);
    expect(reserved).toBe(0);
    expect(100_000 - balance).toBe(Number(row!.debit));
    expect(Number(row!.debit)).toBe(cost(30, 31));
  });

  describe('a client that hangs up after its request went upstream pays for it', () => {
    const sent = () => waitFor(async () => fake.calls.chat >= 1 || undefined, 3000, 5);
    const completedRow = async (tenant: string) => {
      const [row] = await waitFor(async () => {
        const rows = await ledgerRows(ds, tenant);
        return rows.length === 1 && rows[0]!.status !== 'pending' ? rows : undefined;
      }, 5000, 20);
      await settled();
      return row!;
    };

    it.each([false, true])('before the first byte (stream: %s): the answer is read to its usage and billed', async (stream) => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      const client = await sdk(tenant);
      fake.behave({ firstByteDelayMs: 300 });
      const controller = new AbortController();
      const call = client.chat.completions.create({ ...chat, stream }, { signal: controller.signal }).then(
        () => 'answered',
        (e: unknown) => (e instanceof APIUserAbortError ? 'aborted' : String(e)),
      );
      await sent();
      controller.abort();
      expect(await call).toBe('aborted');
      const row = await completedRow(tenant);
      expect(row).toMatchObject({ status: 'succeeded', error_code: 'client_disconnected', usage_estimated: false, input_tokens: 5, output_tokens: 4, debit: String(cost(5, 4)) });
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 100_000 - cost(5, 4), reserved: 0 });
    });

    it('a stream whose upstream sends no usage: the input estimate plus what was generated, marked estimated', async () => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      fake.behave({ firstByteDelayMs: 300, omitUsage: true });
      const controller = new AbortController();
      const call = (await sdk(tenant)).chat.completions.create({ ...chat, stream: true }, { signal: controller.signal }).catch(() => undefined);
      await sent();
      controller.abort();
      await call;
      const row = await completedRow(tenant);
      expect(row).toMatchObject({ status: 'succeeded', error_code: 'client_disconnected', usage_estimated: true });
      expect(row.input_tokens).toBeGreaterThan(0);
      expect(row.output_tokens).toBeGreaterThan(0);
      expect(Number(row.debit)).toBe(cost(row.input_tokens, row.output_tokens));
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 100_000 - Number(row.debit), reserved: 0 });
    });

    it('a time-out after sending: 504, and the admission estimate (input and output reserved) is billed on a failed row marked estimated', async () => {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      fake.behave({ firstByteDelayMs: 1500 });
      const body = { model: 'fake-chat-1', messages: [{ role: 'user' as const, content: 'tell me about '.repeat(100) }] };
      await expect((await sdk(tenant)).chat.completions.create(body)).rejects.toMatchObject({ status: 504, code: 'provider_timeout' });
      const row = await completedRow(tenant);
      // The answer never came: the input as admission bounded it (every byte sent), the output the provider was allowed (1,024 by default).
      expect(row).toMatchObject({ status: 'failed', error_code: 'provider_timeout', usage_estimated: true, output_tokens: 1024 });
      expect(row.input_tokens).toBeGreaterThan(Buffer.byteLength(JSON.stringify(body)));
      expect(row.debit).toBe(String(cost(row.input_tokens, 1024)));
      expect(row.debit).toBe(row.reserved);
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 100_000 - Number(row.debit), reserved: 0 });
    });

    it('a client that leaves before its request is sent (queued for the one upstream connection) pays nothing, and the provider never sees it', async () => {
      const narrow = await startGateway(te, { OAUTH_ISSUER: ISSUER, PROVIDER_INHOUSE_URL: fake.url, PROVIDER_MAX_CONNECTIONS: '1', PROVIDER_MAX_RETRIES: '0' });
      try {
        const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
        const client = async () =>
          new OpenAI({ baseURL: `${narrow.url}/v1`, apiKey: await issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
        fake.behave({ firstByteDelayMs: 600 });
        const first = (await client()).chat.completions.create(chat);
        await sent();
        const controller = new AbortController();
        const second = (await client()).chat.completions.create({ ...chat, max_tokens: 3 }, { signal: controller.signal }).catch((e: unknown) => (e instanceof APIUserAbortError ? 'aborted' : String(e)));
        await waitFor(async () => (await ledgerRows(ds, tenant)).length === 2 || undefined, 3000, 10);
        controller.abort();
        expect(await second).toBe('aborted');
        await first;
        await new Promise((r) => setTimeout(r, 200));
        await narrow.pipeline.drain();
        expect(fake.calls.chat).toBe(1);
        const rows = await ledgerRows(ds, tenant);
        expect(rows.map((r) => [r.status, r.error_code, r.debit]).sort()).toEqual([
          ['failed', 'client_disconnected', '0'],
          ['succeeded', null, String(cost(5, 4))],
        ]);
        expect(await balanceOf(ds, tenant)).toEqual({ balance: 100_000 - cost(5, 4), reserved: 0 });
      } finally {
        await narrow.close();
      }
    });
  });

  it('honours a revocation: a cached token of a deleted client is refused within moments', async () => {
    const clientId = 'ffc_revoked_1';
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(billable, ['core'], clientId), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
    await expect(client.chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
    await issuer.app.get(ClientRevocations).revoke(clientId);
    await waitFor(async () => (await client.chat.completions.create(chat).then(() => false, (e: { status?: number; code?: string }) => e.status === 401 && e.code === 'invalid_token')) || undefined, 5000);
  });

  it('exports requests, tokens, debits, upstream latency and overhead by product, provider and model', async () => {
    await (await sdk(billable)).chat.completions.create(chat);
    const text = (await http(`${gw.metricsUrl}/metrics`)).text;
    expect(text).toMatch(/gateway_requests_total\{[^}]*product="core",provider="inhouse",model="fake-chat-1",endpoint="chat.completions",outcome="succeeded"[^}]*\} \d+/);
    expect(text).toMatch(/gateway_tokens_total\{[^}]*direction="output"[^}]*\} \d+/);
    expect(text).toMatch(/gateway_debit_microcredits_total\{[^}]*model="fake-chat-1"[^}]*\} \d+/);
    expect(text).toMatch(/gateway_upstream_duration_seconds_count\{[^}]*provider="inhouse"[^}]*\} \d+/);
    expect(text).toMatch(/gateway_overhead_seconds_count\{[^}]*endpoint="chat.completions"[^}]*\} \d+/);
    expect(text).toMatch(/http_requests_total\{[^}]*route="\/v1\/chat\/completions",status="200"[^}]*\} \d+/);
  });

  it('a stream the upstream breaks midway ends with an error event, and its row records what was delivered as failed', async () => {
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
    fake.behave({ breakAfterChunks: 3 });
    const stream = await (await sdk(tenant)).chat.completions.create({ model: 'fake-chat-1', stream: true, messages: [{ role: 'user', content: 'a b c d e f g h' }] });
    let text = '';
    await expect(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      })(),
    ).rejects.toMatchObject({ code: 'provider_error' });
    expect(text.length).toBeGreaterThan(0);
    await settled();
    const [row] = await ledgerRows(ds, tenant);
    expect(row).toMatchObject({ status: 'failed', error_code: 'upstream_broken', usage_estimated: true });
    expect(row!.output_tokens).toBeGreaterThan(0);
    expect(100_000 - (await balanceOf(ds, tenant)).balance).toBe(Number(row!.debit));
  });

  it("hears management-api's tenant-changed message: an entitlement granted applies at once", async () => {
    const tenant = await createTenant(ds, { balance: 100_000 });
    const client = await sdk(tenant);
    await expect(client.chat.completions.create(chat)).rejects.toMatchObject({ status: 403, code: 'entitlement_required' });
    await ds.query(`INSERT INTO entitlements (tenant_id, product_key, tier) VALUES ($1, 'core', 'enterprise')`, [tenant]);
    await gw.app.get<PubSub>(PUBSUB).publish(CHANNELS.tenantChanged, { tenantId: tenant });
    await waitFor(async () => (await client.chat.completions.create(chat).then(() => true, () => false)) || undefined, 3000);
  });

  it('emergency fallback: inhouse failing, hosted permitted -> served by hosted, and the row names both', async () => {
    const hosted = await FakeModelUpstream.start();
    const emergency = await startGateway(te, {
      OAUTH_ISSUER: ISSUER,
      PROVIDER_INHOUSE_URL: fake.url,
      PROVIDER_HOSTED_URL: hosted.url,
      PROVIDER_HOSTED_EMERGENCY: 'true',
      PROVIDER_MAX_RETRIES: '0',
    });
    try {
      const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      fake.behave({ failure: { kind: 'status', status: 503 } });
      const client = new OpenAI({ baseURL: `${emergency.url}/v1`, apiKey: await issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
      await expect(client.chat.completions.create(chat)).resolves.toMatchObject({ object: 'chat.completion' });
      expect([fake.calls.chat, hosted.calls.chat]).toEqual([1, 1]);
      // hosted (OpenAI's API, whose reasoning models refuse max_tokens) is told the limit in max_completion_tokens only.
      expect(hosted.lastBody.chat).toMatchObject({ max_completion_tokens: 1024 });
      expect(hosted.lastBody.chat).not.toHaveProperty('max_tokens');
      await emergency.pipeline.drain();
      expect(await ledgerRows(ds, tenant)).toEqual([expect.objectContaining({ status: 'succeeded', provider: 'hosted', requested_provider: 'inhouse', input_tokens: 5 })]);
    } finally {
      fake.reset();
      await emergency.close();
      await hosted.close();
    }
  });

  it('a development and a production gateway each refuse the other\'s token', async () => {
    const prodIssuer = await startIssuer(te, 'https://api.flagship.example', 'flagship-prod');
    const prod = await startGateway(te, { OAUTH_ISSUER: 'https://api.flagship.example', OAUTH_AUDIENCE: 'flagship-prod', PROVIDER_INHOUSE_URL: fake.url });
    try {
      const devToken = await issue(billable);
      const prodToken = await prodIssuer.issue(billable);
      const call = (url: string, apiKey: string) =>
        new OpenAI({ baseURL: `${url}/v1`, apiKey, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 }).chat.completions.create(chat);
      await expect(call(prod.url, devToken)).rejects.toMatchObject({ status: 401, code: 'invalid_token' });
      await expect(call(gw.url, prodToken)).rejects.toMatchObject({ status: 401, code: 'invalid_token' });
      await expect(call(prod.url, prodToken)).resolves.toMatchObject({ object: 'chat.completion' });
      await expect(call(gw.url, devToken)).resolves.toMatchObject({ object: 'chat.completion' });
    } finally {
      await prod.close();
      await prodIssuer.app.close();
    }
  });
});
