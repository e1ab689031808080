import OpenAI from 'openai';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, FakeModelUpstream, type TestEnvironment } from '@flagship/testing';
import type { GatewayPipeline } from './gateway.pipeline';
import { balanceOf, createTenant, fakeChatCost, type IssueToken, ledgerRows, startGateway, startIssuer, TEST_AUDIENCE, TEST_ISSUER } from './testing/gateway.fixture';

/**
 * What agents speak (issue 23), through the real SDKs against the started gateway and the fake
 * upstream: Chat Completions tool calling and `n`; each call's ledger row.
 */
describe('ai-gateway: tool calling and the agent APIs', () => {
  let te: TestEnvironment;
  let fake: FakeModelUpstream;
  let issuer: RunningApp;
  let issue: IssueToken;
  let gw: RunningApp & { pipeline: GatewayPipeline };
  let ds: DataSource;
  let tenant: string;

  beforeAll(async () => {
    te = await createTestEnvironment();
    fake = await FakeModelUpstream.start();
    ({ app: issuer, issue } = await startIssuer(te, TEST_ISSUER, TEST_AUDIENCE));
    gw = await startGateway(te, {
      OAUTH_ISSUER: TEST_ISSUER,
      OAUTH_AUDIENCE: TEST_AUDIENCE,
      PROVIDER_INHOUSE_URL: fake.url,
      PROVIDER_MAX_RETRIES: '0',
      PROVIDER_BREAKER_FAILURES: '1000',
    });
    ds = gw.app.get<DataSource>(DATA_SOURCE);
    tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 10_000_000 });
  });

  afterAll(async () => {
    await gw?.close();
    await issuer?.close();
    await fake?.close();
    await te?.teardown();
  });

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
});
