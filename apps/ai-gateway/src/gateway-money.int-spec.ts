import { request } from 'node:http';
import Anthropic, { AuthenticationError as AnthropicAuthenticationError } from '@anthropic-ai/sdk';
import OpenAI, { APIError, APIUserAbortError } from 'openai';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import { type FakeModelUpstream, http, waitFor } from '@flagship/testing';
import type { GatewayPipeline } from './gateway.pipeline';
import { balanceOf, createTenant, fakeChatCost as cost, type GatewayIntegration, type IssueToken, type LedgerRow, ledgerRows, startGatewayIntegration } from './testing/gateway.fixture';

/**
 * What a hostile tenant cannot make cheaper or free (issue 30), through the real `openai` and
 * `@anthropic-ai/sdk` clients, the gateway started on real Postgres and Redis, and the fake upstream:
 * a request whose usage is lost costs at least its admission estimate's input; the upstream is told the
 * output limit in the field it honours, and a settlement above its reservation is marked; a caller
 * without a valid token is refused before its body is read; a refused request spends none of its
 * client's token window; the caller's own request id is on its row.
 */
describe('ai-gateway: what a request is charged, and what a refused one is not', () => {
  let fake: FakeModelUpstream;
  let issue: IssueToken;
  let gw: RunningApp & { pipeline: GatewayPipeline };
  let ds: DataSource;

  let setup: GatewayIntegration | undefined;

  /** An image counts this many input tokens at admission (GATEWAY_IMAGE_TOKENS), whatever its URL's bytes. */
  const IMAGE_TOKENS = 5_000;
  const TPM = 60_000;

  beforeAll(async () => {
    setup = await startGatewayIntegration({
      GATEWAY_IMAGE_TOKENS: String(IMAGE_TOKENS),
      GATEWAY_RATE_LIMIT_TPM: String(TPM),
      // A caller that hung up: its non-streamed answer is awaited this long, then given up on.
      PROVIDER_ABANDONED_READ_MS: '300',
      PROVIDER_FIRST_BYTE_TIMEOUT_MS: '5000',
      PROVIDER_BREAKER_FAILURES: '1000',
    });
    ({ fake, issue, gw } = setup);
    ds = gw.app.get<DataSource>(DATA_SOURCE);
  });

  afterAll(() => setup?.close());

  beforeEach(() => fake.reset());

  const billable = (balance = 1_000_000) => createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance });
  const openai = async (tenant: string, clientId?: string, headers: Record<string, string> = {}) =>
    new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(tenant, ['core'], clientId), defaultHeaders: { 'x-service-product-key': 'core', ...headers }, maxRetries: 0, timeout: 10_000 });

  /** The tenant's rows once none is pending and every settlement is written. */
  const completed = async (tenant: string, count: number): Promise<LedgerRow[]> => {
    await waitFor(async () => {
      const rows = await ledgerRows(ds, tenant);
      return rows.length === count && rows.every((r) => r.status !== 'pending') ? rows : undefined;
    }, 8000, 20);
    await gw.pipeline.drain();
    return ledgerRows(ds, tenant);
  };

  /** fake-chat-1 costs 1 micro-credit an input token and 2 an output one: a row's admission input is its reservation less its reserved output. */
  const admittedInput = (row: LedgerRow, reservedOutput: number) => Number(row.reserved) - 2 * reservedOutput;

  /** A prompt of 30 words and an image: the fake counts the words only (the image costs the tenant nothing there). */
  const withImage = {
    model: 'fake-chat-1',
    max_tokens: 100,
    messages: [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ') },
          { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${'iVBORw0KGgo'.repeat(20)}` } },
        ],
      },
    ],
  };

  describe('usage lost after sending: never cheaper than an answer', () => {
    it('the openai client hanging up mid-stream, the upstream sending no usage: the input at the admission estimate (its image at GATEWAY_IMAGE_TOKENS), at least what the answer cost', async () => {
      const tenant = await billable();
      const client = await openai(tenant);
      await client.chat.completions.create(withImage);
      const [answered] = await completed(tenant, 1);
      expect(answered).toMatchObject({ status: 'succeeded', usage_estimated: false, input_tokens: 30 });

      fake.behave({ omitUsage: true, chunkDelayMs: 20 });
      const controller = new AbortController();
      const stream = await client.chat.completions.create({ ...withImage, stream: true }, { signal: controller.signal });
      let chunks = 0;
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) chunks++;
        if (chunks === 3) {
          controller.abort();
          break;
        }
      }
      const [, hungUp] = await completed(tenant, 2);
      expect(hungUp).toMatchObject({ stream: true, status: 'succeeded', error_code: 'client_disconnected', usage_estimated: true });
      const input = admittedInput(hungUp!, 100);
      expect(input).toBeGreaterThan(IMAGE_TOKENS);
      expect(hungUp!.input_tokens).toBe(input);
      // The gateway read the rest after the caller left: the whole echo, at four characters a token.
      expect(hungUp!.output_tokens).toBeGreaterThan(0);
      expect(Number(hungUp!.debit)).toBe(cost(hungUp!.input_tokens, hungUp!.output_tokens));
      expect(Number(hungUp!.debit)).toBeGreaterThanOrEqual(cost(input, 0));
      expect(Number(hungUp!.debit)).toBeGreaterThan(Number(answered!.debit));
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 1_000_000 - Number(answered!.debit) - Number(hungUp!.debit), reserved: 0 });
    });

    it('a non-streamed call the caller aborts, whose answer outlasts PROVIDER_ABANDONED_READ_MS: given up on, charged the admission estimate, input and output reserved', async () => {
      const tenant = await billable();
      fake.behave({ firstByteDelayMs: 1500 });
      const controller = new AbortController();
      const call = (await openai(tenant)).chat.completions.create(withImage, { signal: controller.signal }).then(
        () => 'answered',
        (e: unknown) => (e instanceof APIUserAbortError ? 'aborted' : String(e)),
      );
      await waitFor(async () => fake.calls.chat >= 1 || undefined, 3000, 5);
      controller.abort();
      expect(await call).toBe('aborted');
      const [row] = await completed(tenant, 1);
      expect(row).toMatchObject({ stream: false, status: 'failed', usage_estimated: true, output_tokens: 100 });
      const input = admittedInput(row!, 100);
      expect(input).toBeGreaterThan(IMAGE_TOKENS);
      expect(row!.input_tokens).toBe(input);
      expect(Number(row!.debit)).toBeGreaterThanOrEqual(cost(input, 0));
      // All the provider was allowed: the reservation, no more (no overrun).
      expect([row!.debit, row!.overrun]).toEqual([row!.reserved, false]);
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 1_000_000 - Number(row!.debit), reserved: 0 });
    });
  });

  describe('the output limit', () => {
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

    it('inhouse is told the limit in max_tokens as well: a server that reads only max_tokens stops at the limit reserved', async () => {
      const tenant = await billable();
      const client = await openai(tenant);
      fake.behave({ readsOutputLimit: 'max_tokens' });
      const cut = await client.chat.completions.create({ model: 'fake-chat-1', max_completion_tokens: 3, messages: [{ role: 'user', content: words(10) }] });
      expect([cut.choices[0]!.message.content, cut.choices[0]!.finish_reason, cut.usage?.completion_tokens]).toEqual(['echo: w0 w1', 'length', 3]);
      expect(fake.lastBody.chat).toMatchObject({ max_tokens: 3, max_completion_tokens: 3 });
      // No limit sent: the default the gateway reserved, in both fields.
      await client.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] });
      expect(fake.lastBody.chat).toMatchObject({ max_tokens: 1024, max_completion_tokens: 1024 });
      const rows = await completed(tenant, 2);
      expect(rows.map((r) => r.overrun)).toEqual([false, false]);
    });

    it('a provider that ignores the limit: the debit above the reservation is recorded, the row marked overrun, and counted for the alert', async () => {
      const tenant = await billable();
      fake.behave({ readsOutputLimit: 'neither' });
      // 2,000 one-letter words: about 4,000 bytes of input reserved, 3 output tokens; the answer has 2,001 words.
      const answer = await (await openai(tenant)).chat.completions.create({ model: 'fake-chat-1', max_tokens: 3, messages: [{ role: 'user', content: 'a '.repeat(2000).trim() }] });
      expect(answer.usage).toMatchObject({ prompt_tokens: 2000, completion_tokens: 2001 });
      const [row] = await completed(tenant, 1);
      expect(row).toMatchObject({ status: 'succeeded', overrun: true, debit: String(cost(2000, 2001)) });
      expect(Number(row!.debit)).toBeGreaterThan(Number(row!.reserved));
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 1_000_000 - cost(2000, 2001), reserved: 0 });
      const metrics = (await http(`${gw.metricsUrl}/metrics`)).text;
      expect(metrics).toMatch(/^gateway_settlement_overruns_total\{[^}]*product="core",provider="inhouse",model="fake-chat-1"[^}]*\} 1$/m);
      const over = Number(/^gateway_overrun_microcredits_total\{[^}]*model="fake-chat-1"[^}]*\} (\d+)$/m.exec(metrics)?.[1]);
      expect(over).toBe(Number(row!.debit) - Number(row!.reserved));
    });
  });

  describe('a caller without a valid access token is refused before its body is read', () => {
    /**
     * Headers and the first bytes of a 1 MiB body that never comes (Content-Length promises it): the
     * status and body, or 'no answer' when none came while the body was unfinished.
     */
    const unfinished = (path: string, headers: Record<string, string>) =>
      new Promise<{ status: number; body: unknown } | 'no answer'>((resolve, reject) => {
        const req = request(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(1024 * 1024), ...headers } });
        const timer = setTimeout(() => {
          req.destroy();
          resolve('no answer');
        }, 5000);
        req.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            clearTimeout(timer);
            req.destroy();
            resolve({ status: res.statusCode!, body: JSON.parse(text) as unknown });
          });
        });
        req.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
        req.write('{"model":"fake-chat-1","messages":[{"role":"user","content":"');
      });

    it('no token, a forged bearer, a forged x-api-key: 401 in the route\'s error body while the body is still being sent', async () => {
      const product = { 'x-service-product-key': 'core' };
      expect(await unfinished('/v1/chat/completions', product)).toEqual({ status: 401, body: { error: expect.objectContaining({ code: 'invalid_token', type: 'authentication_error' }) } });
      expect(await unfinished('/v1/embeddings', { ...product, authorization: 'Bearer a.b.c' })).toEqual({ status: 401, body: { error: expect.objectContaining({ code: 'invalid_token' }) } });
      expect(await unfinished('/v1/messages', { ...product, 'x-api-key': 'sk-ant-forged', 'anthropic-version': '2023-06-01' })).toEqual({
        status: 401,
        body: expect.objectContaining({ type: 'error', error: expect.objectContaining({ type: 'authentication_error' }) }),
      });
      // A token without ai:invoke is refused there too (403), before its body.
      const tenant = await billable();
      const flagsOnly = await issue(tenant, ['core'], undefined, ['flags:read']);
      expect(await unfinished('/v1/responses', { ...product, authorization: `Bearer ${flagsOnly}` })).toEqual({ status: 403, body: { error: expect.objectContaining({ code: 'insufficient_scope' }) } });
      expect(fake.totalCalls - fake.calls.models).toBe(0);
    });

    it('the SDKs still get their typed errors, and a valid token (verified once, then from the cache) is served', async () => {
      const tenant = await billable();
      const forged = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-forged', defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
      await expect(forged.messages.create({ model: 'fake-chat-1', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] })).rejects.toBeInstanceOf(AnthropicAuthenticationError);
      const client = await openai(tenant);
      for (let i = 0; i < 2; i++) await expect(client.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hello' }] })).resolves.toMatchObject({ object: 'chat.completion' });
    });
  });

  describe("a refused request spends none of its client's token window", () => {
    it('402s (credit, then budget) and a 400 leave the window whole: once the credit is there, the next large request is served, not 429', async () => {
      // The client's window is a calendar minute: start well inside one, so every request below counts in the same.
      const intoMinute = Date.now() % 60_000;
      if (intoMinute > 45_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
      const tenant = await billable(0);
      const clientId = 'ffc_tpmRefusals01';
      const client = await openai(tenant, clientId);
      // Each reserves about 25,000 tokens (max_tokens), so three would spend more than the 60,000 a minute.
      const large = { model: 'fake-chat-1', max_tokens: 25_000, messages: [{ role: 'user' as const, content: 'hello' }] };
      for (let i = 0; i < 3; i++) {
        const err = await client.chat.completions.create(large).catch((e: APIError) => e);
        expect(err).toMatchObject({ status: 402, code: 'insufficient_credits' });
        expect((err as APIError).headers?.get('x-ratelimit-remaining-tokens')).toBe(String(TPM));
      }
      await expect(client.chat.completions.create({ ...large, n: 0 })).rejects.toMatchObject({ status: 400, param: 'n' });
      await ds.query(`UPDATE credit_balances SET balance = 10000000 WHERE tenant_id = $1`, [tenant]);
      // A budget of this client's that the estimate does not fit: 402 budget_exceeded, twice.
      await ds.query(`INSERT INTO budgets (tenant_id, scope_kind, scope_id, monthly_cap) VALUES ($1, 'client', $2, 10)`, [tenant, clientId]);
      for (let i = 0; i < 2; i++) await expect(client.chat.completions.create(large)).rejects.toMatchObject({ status: 402, code: 'budget_exceeded' });
      await ds.query(`DELETE FROM budgets WHERE tenant_id = $1`, [tenant]);
      const { response } = await client.chat.completions.create(large).withResponse();
      expect(Number(response.headers.get('x-ratelimit-remaining-tokens'))).toBeGreaterThan(TPM - 26_000);
      // The window counts what was served: a second and a third large request, and the third is over it.
      await client.chat.completions.create(large);
      await expect(client.chat.completions.create(large)).rejects.toMatchObject({ status: 429, code: 'rate_limited' });
    });
  });

  describe("the caller's own x-request-id", () => {
    it('is recorded on its row (clientRequestId) and echoed; one a caller could abuse is not', async () => {
      const tenant = await billable();
      const own = await openai(tenant, undefined, { 'x-request-id': 'backend-order:42.a_b' });
      const { response } = await own.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      expect(response.headers.get('x-client-request-id')).toBe('backend-order:42.a_b');
      expect(response.headers.get('x-request-id')).not.toBe('backend-order:42.a_b');
      for (const hostile of ['x'.repeat(129), "a'; DROP TABLE usage_ledger; --", 'two words']) {
        const res = await http(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          json: { model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] },
          headers: { authorization: `Bearer ${await issue(tenant)}`, 'x-service-product-key': 'core', 'x-request-id': hostile },
        });
        expect([res.status, res.headers.get('x-client-request-id')]).toEqual([200, null]);
      }
      const rows = await completed(tenant, 4);
      expect(rows.map((r) => r.client_request_id)).toEqual(['backend-order:42.a_b', null, null, null]);
      expect(rows[0]!.request_id).toBe(response.headers.get('x-request-id'));
    });
  });
  describe('no answer without its row\'s "upstream called" stamp', () => {
    // The stamp's commit is what puts a request's row on disk: its reservation was committed without
    // waiting for the flush. A stamp that cannot be written (here a trigger refuses it for one
    // tenant; in production a Postgres that crashed or stalls) must withhold the answer, or a crash
    // then loses the row of a request that was answered: served and never billed.
    let tenant: string;
    beforeAll(async () => {
      tenant = await billable();
      await ds.query(`CREATE FUNCTION refuse_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'stamp refused by the test'; END $$`);
      await ds.query(`CREATE TRIGGER refuse_stamp BEFORE UPDATE OF upstream_called_at ON usage_ledger
        FOR EACH ROW WHEN (NEW.tenant_id = '${tenant}' AND NEW.upstream_called_at IS NOT NULL) EXECUTE FUNCTION refuse_stamp()`);
    });
    afterAll(async () => {
      await ds.query('DROP TRIGGER IF EXISTS refuse_stamp ON usage_ledger');
      await ds.query('DROP FUNCTION IF EXISTS refuse_stamp()');
    });

    it.each([false, true])('stream %s: the provider answered, the caller gets 503 with Retry-After, and nothing is charged', async (stream) => {
      const client = await openai(tenant);
      const before = fake.calls.chat;
      const err = await (stream
        ? (async () => {
            for await (const _ of await client.chat.completions.create({ model: 'fake-chat-1', stream: true, messages: [{ role: 'user', content: 'hello there' }] })) void _;
          })()
        : client.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hello there' }] })
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(APIError);
      expect([(err as APIError).status, (err as APIError).headers?.get('retry-after')]).toEqual([503, '1']);
      expect(fake.calls.chat).toBe(before + 1);
    });

    it('the rows of those requests are settled failed (ledger_unavailable) with no debit, and the balance is whole', async () => {
      const rows = await completed(tenant, 2);
      expect(rows.map((r) => [r.status, r.error_code, Number(r.debit), r.upstream_called_at])).toEqual([
        ['failed', 'ledger_unavailable', 0, null],
        ['failed', 'ledger_unavailable', 0, null],
      ]);
      expect(await balanceOf(ds, tenant)).toEqual({ balance: 1_000_000, reserved: 0 });
    });
  });
});
