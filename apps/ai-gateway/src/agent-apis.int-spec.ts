import Anthropic, { APIError as AnthropicAPIError, AuthenticationError, BadRequestError, NotFoundError, PaymentRequiredError, PermissionDeniedError, RateLimitError } from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import { type FakeModelUpstream, http } from '@flagship/testing';
import type { GatewayPipeline } from './gateway.pipeline';
import { balanceOf, createTenant, fakeChatCost, type GatewayIntegration, type IssueToken, ledgerRows, startGatewayIntegration } from './testing/gateway.fixture';

/**
 * What agents speak (issue 23), through the real SDKs against the started gateway and the fake
 * upstream: Chat Completions tool calling and `n`; each call's ledger row.
 */
describe('ai-gateway: tool calling and the agent APIs', () => {
  let fake: FakeModelUpstream;
  let issue: IssueToken;
  let gw: RunningApp & { pipeline: GatewayPipeline };
  let ds: DataSource;
  let tenant: string;

  let setup: GatewayIntegration | undefined;

  beforeAll(async () => {
    setup = await startGatewayIntegration({ PROVIDER_BREAKER_FAILURES: '1000', GATEWAY_RATE_LIMIT_TPM: '50000', GATEWAY_IMAGE_TOKENS: '1000' });
    ({ fake, issue, gw } = setup);
    ds = gw.app.get<DataSource>(DATA_SOURCE);
    tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 10_000_000 });
  });

  afterAll(() => setup?.close());

  beforeEach(() => fake.reset());

  const settled = () => gw.pipeline.drain();
  /** The one ledger row of the request that answered with this x-request-id. */
  const rowOf = async (requestId: string | null) => {
    await settled();
    const rows = (await ledgerRows(ds, tenant)).filter((r) => r.request_id === requestId);
    expect(rows).toHaveLength(1);
    return rows[0]!;
  };

  const openai = async () =>
    new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });

  const weather: OpenAI.ChatCompletionTool[] = [
    { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  ];

  describe('chat completions: tools end to end', () => {
    it('a tool call, its result sent back, the final answer: each metered on its own row', async () => {
      const client = await openai();
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'get_weather for Paris' }];
      const { data: first, response } = await client.chat.completions.create({ model: 'fake-chat-1', messages, tools: weather, tool_choice: 'auto' }).withResponse();
      expect(first.choices[0]!.finish_reason).toBe('tool_calls');
      const call = first.choices[0]!.message.tool_calls![0]!;
      expect(call).toMatchObject({ id: 'call_fake_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"get_weather for Paris"}' } });
      expect(fake.lastBody.chat).toMatchObject({ tools: weather, tool_choice: 'auto' });
      expect(first.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 1 + 3 });
      expect(await rowOf(response.headers.get('x-request-id'))).toMatchObject({ status: 'succeeded', endpoint: 'chat.completions', input_tokens: 3, output_tokens: 4, debit: String(fakeChatCost(3, 4)) });

      messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21 C' });
      const { data: second, response: r2 } = await client.chat.completions.create({ model: 'fake-chat-1', messages, tools: weather }).withResponse();
      expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'echo: sunny, 21 C' } });
      expect(await rowOf(r2.headers.get('x-request-id'))).toMatchObject({ status: 'succeeded', output_tokens: 4 });
    });

    it('tool_choice naming a function forces the call', async () => {
      const client = await openai();
      const forced = await client.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hello' }], tools: weather, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
      expect(forced.choices[0]!.message.tool_calls![0]).toMatchObject({ function: { name: 'get_weather', arguments: '{"city":"hello"}' } });
    });

    it('streamed tool_calls deltas, assembled by the SDK, with usage on the row', async () => {
      const client = await openai();
      const stream = client.chat.completions.stream({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'please get_weather in Rome' }], tools: weather, stream_options: { include_usage: true } });
      const deltas: string[] = [];
      stream.on('tool_calls.function.arguments.delta', (e) => deltas.push(e.arguments_delta));
      const done = await stream.finalChatCompletion();
      expect(deltas.length).toBeGreaterThan(1);
      expect(done.choices[0]!.message.tool_calls![0]).toMatchObject({ id: 'call_fake_0', function: { name: 'get_weather', arguments: '{"city":"please get_weather in Rome"}' } });
      expect(done.choices[0]!.finish_reason).toBe('tool_calls');
      expect(done.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 1 + 4 });
      await settled();
      const [row] = (await ledgerRows(ds, tenant)).filter((r) => r.stream && r.output_tokens === 5);
      expect(row).toMatchObject({ status: 'succeeded', input_tokens: 4, usage_estimated: false });
    });

    it('n > 1: every choice answered, max_tokens x n reserved, every choice\'s tokens billed', async () => {
      const client = await openai();
      const before = await balanceOf(ds, tenant);
      const { data, response } = await client.chat.completions.create({ model: 'fake-chat-1', n: 3, max_tokens: 10, messages: [{ role: 'user', content: 'one two' }] }).withResponse();
      expect(data.choices.map((c) => c.message.content)).toEqual(['echo: one two', 'echo: one two', 'echo: one two']);
      expect(fake.lastBody.chat).toMatchObject({ n: 3, max_tokens: 10 });
      const row = await rowOf(response.headers.get('x-request-id'));
      expect(row).toMatchObject({ status: 'succeeded', input_tokens: 2, output_tokens: 9, debit: String(fakeChatCost(2, 9)) });
      expect(Number(row.reserved)).toBeGreaterThanOrEqual(fakeChatCost(2, 30));
      expect(await balanceOf(ds, tenant)).toEqual({ balance: before.balance - fakeChatCost(2, 9), reserved: 0 });

      const stream = await client.chat.completions.create({ model: 'fake-chat-1', n: 2, stream: true, messages: [{ role: 'user', content: 'a b' }] });
      const texts = ['', ''];
      for await (const chunk of stream) for (const c of chunk.choices) texts[c.index] += c.delta.content ?? '';
      expect(texts).toEqual(['echo: a b', 'echo: a b']);
      await settled();
      const streamed = (await ledgerRows(ds, tenant)).filter((r) => r.stream && r.input_tokens === 2);
      expect(streamed).toEqual([expect.objectContaining({ status: 'succeeded', output_tokens: 6 })]);
    });
  });

  describe('POST /v1/messages through the @anthropic-ai/sdk', () => {
    const anthropic = async (how: 'apiKey' | 'authToken' = 'apiKey', t = tenant, scopes?: string[]) => {
      const token = await issue(t, ['core'], undefined, scopes);
      return new Anthropic({ baseURL: gw.url, ...(how === 'apiKey' ? { apiKey: token } : { authToken: token }), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });
    };
    const ask = { model: 'fake-chat-1', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hello there world' }] };

    it('create: a message with text, end_turn, usage; one row under endpoint messages; rate-limit and overhead headers', async () => {
      const before = await balanceOf(ds, tenant);
      const client = await anthropic();
      const { data, response } = await client.messages.create({ ...ask, system: 'be brief' }).withResponse();
      expect(data).toMatchObject({ type: 'message', role: 'assistant', model: 'fake-chat-1', content: [{ type: 'text', text: 'echo: hello there world' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 4 } });
      expect(data.id).toMatch(/^msg_/);
      expect(fake.lastBody.chat).toMatchObject({ model: 'fake-chat-1', max_tokens: 50, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello there world' }] });
      expect(fake.lastHeaders.chat?.['x-api-key']).toBeUndefined();
      expect(Number(response.headers.get('x-gateway-overhead-ms'))).toBeGreaterThanOrEqual(0);
      expect(response.headers.get('x-ratelimit-limit-requests')).toEqual(expect.any(String));
      const row = await rowOf(response.headers.get('x-request-id'));
      expect(row).toMatchObject({ status: 'succeeded', endpoint: 'messages', stream: false, model: 'fake-chat-1', input_tokens: 5, output_tokens: 4, debit: String(fakeChatCost(5, 4)) });
      // The estimate counted the input and max_tokens, as Chat Completions' does.
      expect(Number(row.reserved)).toBeGreaterThanOrEqual(fakeChatCost(5, 50));
      expect(await balanceOf(ds, tenant)).toEqual({ balance: before.balance - fakeChatCost(5, 4), reserved: 0 });
    });

    it('authToken (Authorization: Bearer) works like apiKey (x-api-key); anthropic-version is accepted; system blocks, stop_sequences, max_tokens', async () => {
      const client = await anthropic('authToken');
      // temperature is Anthropic's, though this SDK version's types leave it out.
      const sampled = { temperature: 0.5 } as object;
      const blocks = await client.messages.create({ ...ask, system: [{ type: 'text', text: 'be' }, { type: 'text', text: 'brief' }], ...sampled, metadata: { user_id: 'u-9' } });
      expect(blocks.content).toEqual([{ type: 'text', text: 'echo: hello there world' }]);
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ role: 'system', content: 'be\nbrief' }, { role: 'user' }], temperature: 0.5, user: 'u-9' });
      const stopped = await client.messages.create({ ...ask, stop_sequences: ['there'] });
      expect(stopped).toMatchObject({ content: [{ type: 'text', text: 'echo: hello' }], stop_reason: 'stop_sequence', stop_sequence: 'there' });
      const cut = await client.messages.create({ ...ask, max_tokens: 2 });
      expect(cut).toMatchObject({ content: [{ type: 'text', text: 'echo: hello' }], stop_reason: 'max_tokens', usage: { output_tokens: 2 } });
    });

    it('an image block goes up as an image_url part and is estimated as an image', async () => {
      const client = await anthropic();
      const { response } = await client.messages
        .create({ ...ask, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }, { type: 'text', text: 'what is it' }] }] })
        .withResponse();
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }, { type: 'text', text: 'what is it' }] }] });
      const row = await rowOf(response.headers.get('x-request-id'));
      expect(Number(row.reserved)).toBeGreaterThanOrEqual(fakeChatCost(1000, 50));
    });

    it('stream: Anthropic\'s event sequence, assembled by the SDK; usage in message_delta; one streamed row', async () => {
      const client = await anthropic();
      const stream = client.messages.stream(ask);
      let text = '';
      stream.on('text', (t) => (text += t));
      const message = await stream.finalMessage();
      expect(text).toBe('echo: hello there world');
      expect(message).toMatchObject({ content: [{ type: 'text', text: 'echo: hello there world' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 4 } });
      const raw = await http(`${gw.url}/v1/messages`, {
        method: 'POST',
        json: { ...ask, stream: true },
        headers: { 'x-api-key': await issue(tenant), 'x-service-product-key': 'core', 'anthropic-version': '2023-06-01' },
      });
      expect(raw.status).toBe(200);
      const events = String(raw.text).split('\n\n').filter((e) => e !== '').map((e) => e.split('\n')[0]!.replace('event: ', ''));
      expect(events).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
      await settled();
      const rows = (await ledgerRows(ds, tenant)).filter((r) => r.endpoint === 'messages' && r.stream);
      expect(rows).toHaveLength(2);
      expect(rows.every((r) => r.status === 'succeeded' && r.input_tokens === 3 && r.output_tokens === 4 && !r.usage_estimated)).toBe(true);
    });

    const weatherTool = { name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };

    it('tool use round trip: tool_use block and stop_reason tool_use, the tool_result sent back, the final answer', async () => {
      const client = await anthropic();
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'get_weather for Paris' }];
      const first = await client.messages.create({ ...ask, messages, tools: [weatherTool] });
      expect(first.stop_reason).toBe('tool_use');
      expect(first.content).toEqual([{ type: 'tool_use', id: 'call_fake_0', name: 'get_weather', input: { city: 'get_weather for Paris' } }]);
      expect(fake.lastBody.chat).toMatchObject({ tools: [{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: weatherTool.input_schema } }] });
      messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_fake_0', content: 'sunny, 21 C' }] });
      const second = await client.messages.create({ ...ask, messages, tools: [weatherTool] });
      expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'echo: sunny, 21 C' }] });
      expect(fake.lastBody.chat).toMatchObject({
        messages: [
          { role: 'user', content: 'get_weather for Paris' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_fake_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"get_weather for Paris"}' } }] },
          { role: 'tool', tool_call_id: 'call_fake_0', content: 'sunny, 21 C' },
        ],
      });
      // tool_choice naming the tool forces it; any is required; streamed, the input arrives as input_json_delta.
      const forced = await client.messages.create({ ...ask, tools: [weatherTool], tool_choice: { type: 'tool', name: 'get_weather' } });
      expect(forced.content).toEqual([{ type: 'tool_use', id: 'call_fake_0', name: 'get_weather', input: { city: 'hello there world' } }]);
      expect(fake.lastBody.chat).toMatchObject({ tool_choice: { type: 'function', function: { name: 'get_weather' } } });
      const stream = client.messages.stream({ ...ask, tools: [weatherTool], tool_choice: { type: 'any' } });
      const partial: string[] = [];
      stream.on('inputJson', (delta) => partial.push(delta));
      const streamed = await stream.finalMessage();
      expect(fake.lastBody.chat).toMatchObject({ tool_choice: 'required' });
      expect(partial.length).toBeGreaterThan(1);
      expect(streamed).toMatchObject({ stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'call_fake_0', name: 'get_weather', input: { city: 'hello there world' } }] });
    });

    it('errors as the SDK\'s APIError subclasses, in Anthropic\'s body', async () => {
      const expectError = async (call: Promise<unknown>, type: new (...args: never[]) => AnthropicAPIError, status: number, errorType: string) => {
        const err = await call.then(() => undefined, (e: unknown) => e);
        expect(err).toBeInstanceOf(type);
        expect(err).toMatchObject({ status, error: { type: 'error', error: { type: errorType, message: expect.any(String) } } });
        return err as AnthropicAPIError;
      };
      const forged = new Anthropic({ baseURL: gw.url, apiKey: 'not-a-jwt', defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
      await expectError(forged.messages.create(ask), AuthenticationError, 401, 'authentication_error');
      await expectError((await anthropic('apiKey', tenant, ['flags:read'])).messages.create(ask), PermissionDeniedError, 403, 'permission_error');
      const noEntitlement = await createTenant(ds, { balance: 100_000 });
      await expectError((await anthropic('apiKey', noEntitlement)).messages.create(ask), PermissionDeniedError, 403, 'permission_error');
      const client = await anthropic();
      await expectError(client.messages.create({ ...ask, max_tokens: undefined } as never), BadRequestError, 400, 'invalid_request_error');
      await expectError(client.messages.create({ ...ask, model: 'nope' }), NotFoundError, 404, 'not_found_error');
      await expectError(client.messages.create({ ...ask, tools: [{ type: 'web_search_20250305', name: 'web_search' }] } as never), BadRequestError, 400, 'invalid_request_error');
      const broke = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 0 });
      const credits = await expectError((await anthropic('apiKey', broke)).messages.create(ask), PaymentRequiredError, 402, 'billing_error');
      expect(credits.message).toContain('buy credits');
      const limited = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
      const rate = await expectError((await anthropic('apiKey', limited)).messages.create({ ...ask, max_tokens: 60_000 }), RateLimitError, 429, 'rate_limit_error');
      expect(Number(rate.headers?.get('retry-after'))).toBeGreaterThan(0);
      fake.failNext({ kind: 'status', status: 400, body: { error: { message: 'upstream says no', type: 'invalid_request_error', code: null, param: null } } });
      const relayed = await expectError(client.messages.create(ask), BadRequestError, 400, 'invalid_request_error');
      expect(relayed.message).toContain('upstream says no');
      fake.failNext({ kind: 'status', status: 500 });
      await expectError(client.messages.create(ask), AnthropicAPIError, 502, 'api_error');
      // The layer's own refusals too: malformed JSON, a wrong method.
      const token = await issue(tenant);
      const malformed = await http(`${gw.url}/v1/messages`, { method: 'POST', body: '{nope', headers: { 'content-type': 'application/json', 'x-api-key': token, 'x-service-product-key': 'core' } });
      expect(malformed.status).toBe(400);
      expect(malformed.body).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) }, request_id: expect.any(String) });
      const countTokens = await http(`${gw.url}/v1/messages/count_tokens`, { method: 'POST', json: ask, headers: { 'x-api-key': token } });
      expect(countTokens.status).toBe(404);
      expect(countTokens.body).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
      const wrongMethod = await http(`${gw.url}/v1/messages`, { method: 'GET', headers: { 'x-api-key': token } });
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    });

    it('a stream the upstream breaks midway ends with an error event the SDK raises; the row records what was delivered', async () => {
      const t = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      // Chunks apart, so the words reach the gateway before the break does (a reset can drop what undici had not yet read).
      fake.behave({ breakAfterChunks: 3, chunkDelayMs: 20 });
      const stream = await (await anthropic('apiKey', t)).messages.create({ ...ask, stream: true, messages: [{ role: 'user', content: 'a b c d e f g h' }] });
      const seen: string[] = [];
      await expect(
        (async () => {
          for await (const e of stream) seen.push(e.type);
        })(),
      ).rejects.toBeInstanceOf(AnthropicAPIError);
      expect(seen.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
      expect(seen).not.toContain('message_stop');
      await settled();
      const [row] = await ledgerRows(ds, t);
      expect(row).toMatchObject({ endpoint: 'messages', status: 'failed', error_code: 'upstream_broken', usage_estimated: true });
      expect(row!.output_tokens).toBeGreaterThan(0);
    });

    it('bounds what a tenant controls: blocks, tools, stop sequences', async () => {
      const client = await anthropic();
      const tools = Array.from({ length: 129 }, (_, i) => ({ ...weatherTool, name: `t${i}` }));
      await expect(client.messages.create({ ...ask, tools })).rejects.toBeInstanceOf(BadRequestError);
      const blocks = Array.from({ length: 1025 }, () => ({ type: 'text' as const, text: 'x' }));
      await expect(client.messages.create({ ...ask, messages: [{ role: 'user', content: blocks }] })).rejects.toBeInstanceOf(BadRequestError);
      await expect(client.messages.create({ ...ask, stop_sequences: Array.from({ length: 17 }, (_, i) => `s${i}`) })).rejects.toBeInstanceOf(BadRequestError);
      expect(fake.calls.chat).toBe(0);
    });
  });

  describe('POST /v1/responses through the openai SDK', () => {
    const weatherFn: OpenAI.Responses.FunctionTool = { type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: false };

    it('create: input and instructions -> a response with a message item, output_text and usage; one row under endpoint responses', async () => {
      const client = await openai();
      const { data, response } = await client.responses.create({ model: 'fake-chat-1', instructions: 'be brief', input: 'hello there world', max_output_tokens: 50, temperature: 0.2 }).withResponse();
      expect(data).toMatchObject({ object: 'response', status: 'completed', model: 'fake-chat-1', output_text: 'echo: hello there world', instructions: 'be brief', temperature: 0.2, store: false });
      expect(data.id).toMatch(/^resp_/);
      expect(data.output).toEqual([expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed', content: [expect.objectContaining({ type: 'output_text', text: 'echo: hello there world' })] })]);
      expect(data.usage).toMatchObject({ input_tokens: 5, output_tokens: 4, total_tokens: 9 });
      expect(fake.lastBody.chat).toMatchObject({ messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello there world' }], max_completion_tokens: 50, temperature: 0.2 });
      expect(Number(response.headers.get('x-gateway-overhead-ms'))).toBeGreaterThanOrEqual(0);
      expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('50000');
      const row = await rowOf(response.headers.get('x-request-id'));
      expect(row).toMatchObject({ status: 'succeeded', endpoint: 'responses', input_tokens: 5, output_tokens: 4, debit: String(fakeChatCost(5, 4)) });
      expect(Number(row.reserved)).toBeGreaterThanOrEqual(fakeChatCost(5, 50));
      const cut = await client.responses.create({ model: 'fake-chat-1', input: 'a b c d', max_output_tokens: 2 });
      expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output_text: 'echo: a' });
    });

    it('function tools round trip: a function_call item, its output sent back as items, the final answer', async () => {
      const client = await openai();
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: [{ type: 'input_text', text: 'get_weather for Paris' }] }];
      const first = await client.responses.create({ model: 'fake-chat-1', input, tools: [weatherFn], tool_choice: 'auto' });
      expect(first.output).toEqual([expect.objectContaining({ type: 'function_call', call_id: 'call_fake_0', name: 'get_weather', arguments: '{"city":"get_weather for Paris"}', status: 'completed' })]);
      expect(fake.lastBody.chat).toMatchObject({ tools: [{ type: 'function', function: { name: 'get_weather', parameters: weatherFn.parameters, strict: false } }], tool_choice: 'auto' });
      const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
      input.push({ type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments }, { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' });
      const second = await client.responses.create({ model: 'fake-chat-1', input, tools: [weatherFn] });
      expect(second.output_text).toBe('echo: sunny, 21 C');
      expect(fake.lastBody.chat).toMatchObject({
        messages: [
          { role: 'user', content: 'get_weather for Paris' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_fake_0', type: 'function', function: { name: 'get_weather' } }] },
          { role: 'tool', tool_call_id: 'call_fake_0', content: 'sunny, 21 C' },
        ],
      });
      const forced = await client.responses.create({ model: 'fake-chat-1', input: 'hi', tools: [weatherFn], tool_choice: { type: 'function', name: 'get_weather' } });
      expect(forced.output[0]).toMatchObject({ type: 'function_call', arguments: '{"city":"hi"}' });
    });

    it('streamed: the documented events in order, text deltas, completed with usage; one streamed row', async () => {
      const client = await openai();
      const stream = await client.responses.create({ model: 'fake-chat-1', input: 'one two', stream: true });
      const types: string[] = [];
      let text = '';
      let completed: OpenAI.Responses.Response | undefined;
      const sequence: number[] = [];
      for await (const event of stream) {
        types.push(event.type);
        sequence.push(event.sequence_number);
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }
      expect(text).toBe('echo: one two');
      expect(types).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.delta',
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(sequence).toEqual(types.map((_, i) => i));
      expect(completed).toMatchObject({ status: 'completed', usage: { input_tokens: 2, output_tokens: 3, total_tokens: 5 }, output: [{ type: 'message', content: [{ text: 'echo: one two' }] }] });
      await settled();
      const rows = (await ledgerRows(ds, tenant)).filter((r) => r.endpoint === 'responses' && r.stream);
      expect(rows).toEqual([expect.objectContaining({ status: 'succeeded', input_tokens: 2, output_tokens: 3, usage_estimated: false })]);
    });

    it("streamed function call through the SDK's stream helper: arguments deltas, the final response", async () => {
      const client = await openai();
      const stream = client.responses.stream({ model: 'fake-chat-1', input: 'please get_weather in Rome', tools: [weatherFn] });
      const deltas: string[] = [];
      stream.on('response.function_call_arguments.delta', (e) => deltas.push(e.delta));
      const final = await stream.finalResponse();
      expect(deltas.join('')).toBe('{"city":"please get_weather in Rome"}');
      expect(deltas.length).toBeGreaterThan(1);
      expect(final.output).toEqual([expect.objectContaining({ type: 'function_call', call_id: 'call_fake_0', name: 'get_weather', arguments: '{"city":"please get_weather in Rome"}' })]);
      const text = await client.responses.stream({ model: 'fake-chat-1', input: 'a b c' }).finalResponse();
      expect(text.output_text).toBe('echo: a b c');
    });

    it('what needs server-side state is refused with a clear 400, before the provider; so are built-in tools and unbounded lists', async () => {
      const client = await openai();
      const refused = async (body: Record<string, unknown>, param: string, message: RegExp) => {
        const err = await client.responses.create({ model: 'fake-chat-1', input: 'hi', ...body } as never).then(() => undefined, (e: unknown) => e);
        expect(err).toBeInstanceOf(OpenAI.BadRequestError);
        expect(err).toMatchObject({ status: 400, code: 'invalid_request', param });
        expect((err as Error).message).toMatch(message);
      };
      await refused({ previous_response_id: 'resp_123' }, 'previous_response_id', /stateless/);
      await refused({ store: true }, 'store', /stateless/);
      await refused({ background: true }, 'background', /stateless/);
      await refused({ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]', /stored/);
      await refused({ tools: [{ type: 'web_search' }] }, 'tools[0].type', /built-in/);
      await refused({ tools: Array.from({ length: 129 }, (_, i) => ({ ...weatherFn, name: `t${i}` })) }, 'tools', /at most 128/);
      await refused({ input: Array.from({ length: 4097 }, () => ({ role: 'user', content: 'x' })) }, 'input', /at most 4096/);
      await expect(client.responses.create({ model: 'fake-chat-1', input: 'hi', store: false })).resolves.toMatchObject({ status: 'completed' });
      expect(fake.calls.chat).toBe(1);
    });

    it('a stream the upstream breaks midway ends with an error event the SDK raises; the row records it as failed', async () => {
      const t = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
      fake.behave({ breakAfterChunks: 3, chunkDelayMs: 20 });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(t), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
      const stream = await client.responses.create({ model: 'fake-chat-1', input: 'a b c d e f g h', stream: true });
      const types: string[] = [];
      await expect(
        (async () => {
          for await (const e of stream) types.push(e.type);
        })(),
      ).rejects.toBeInstanceOf(OpenAI.APIError);
      expect(types).toContain('response.output_text.delta');
      expect(types).not.toContain('response.completed');
      await settled();
      const [row] = await ledgerRows(ds, t);
      expect(row).toMatchObject({ endpoint: 'responses', status: 'failed', error_code: 'upstream_broken' });
    });

    it('exports overhead and requests by endpoint for the new routes', async () => {
      const metrics = await http(`${gw.metricsUrl}/metrics`);
      const text = String(metrics.text);
      expect(text).toMatch(/gateway_overhead_seconds_count\{[^}]*endpoint="messages"[^}]*\} [1-9]/);
      expect(text).toMatch(/gateway_overhead_seconds_count\{[^}]*endpoint="responses"[^}]*\} [1-9]/);
      expect(text).toMatch(/gateway_requests_total\{[^}]*endpoint="messages",outcome="succeeded"[^}]*\} [1-9]/);
    });
  });
});
