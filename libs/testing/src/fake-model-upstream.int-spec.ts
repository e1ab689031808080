import OpenAI, { APIConnectionError, APIError, AuthenticationError } from 'openai';
import { FakeModelUpstream, fakeEmbedding } from './fake-model-upstream';

/** The fake speaks OpenAI's protocol: the real `openai` SDK is the judge. */
describe('FakeModelUpstream, through the openai SDK', () => {
  let fake: FakeModelUpstream;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await FakeModelUpstream.start({ apiKey: 'sk-fake-1' });
    client = new OpenAI({ baseURL: fake.url, apiKey: 'sk-fake-1', maxRetries: 0, timeout: 5000 });
  });
  afterAll(async () => fake.close());
  beforeEach(() => fake.reset());

  it('echoes the last user message with word counts as tokens', async () => {
    const r = await client.chat.completions.create({
      model: 'fake-chat-1',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hello there world' }] },
      ],
    });
    expect(r.choices[0]!.message.content).toBe('echo: hello there world');
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage).toEqual({ prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 });
    expect(fake.calls.chat).toBe(1);
    expect(fake.lastHeaders.chat?.authorization).toBe('Bearer sk-fake-1');
  });

  it('cuts the reply to max_tokens words', async () => {
    const r = await client.chat.completions.create({ model: 'm', max_tokens: 2, messages: [{ role: 'user', content: 'a b c d' }] });
    expect(r.choices[0]!.message.content).toBe('echo: a');
    expect(r.usage?.completion_tokens).toBe(2);
  });

  it('streams a chunk per word, and the usage chunk after the finish_reason chunk when asked', async () => {
    const stream = await client.chat.completions.create({
      model: 'fake-chat-1',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'one two three' }],
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('echo: one two three');
    const finishAt = chunks.findIndex((c) => c.choices[0]?.finish_reason === 'stop');
    const usageAt = chunks.findIndex((c) => c.usage);
    expect(finishAt).toBeGreaterThan(0);
    expect(usageAt).toBe(finishAt + 1);
    expect(chunks[usageAt]!.choices).toEqual([]);
    expect(chunks[usageAt]!.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(usageAt).toBe(chunks.length - 1);
  });

  it('sends no usage chunk unless asked', async () => {
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }] });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
  });

  const weather = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

  it('calls the tool the last user message names; answers the tool result with text; says length when max_tokens cut', async () => {
    const asked = await client.chat.completions.create({ model: 'm', tools: weather, messages: [{ role: 'user', content: 'get_weather Paris' }] });
    expect(asked.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { content: null, tool_calls: [{ id: 'call_fake_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"get_weather Paris"}' } }] },
    });
    expect(asked.usage?.completion_tokens).toBe(1 + 2);
    const answered = await client.chat.completions.create({
      model: 'm',
      tools: weather,
      messages: [
        { role: 'user', content: 'get_weather Paris' },
        { role: 'assistant', content: null, tool_calls: asked.choices[0]!.message.tool_calls },
        { role: 'tool', tool_call_id: 'call_fake_0', content: 'sunny 21C' },
      ],
    });
    expect(answered.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'echo: sunny 21C' } });
    // Not named, not forced: no call; 'none' never calls.
    const plain = await client.chat.completions.create({ model: 'm', tools: weather, messages: [{ role: 'user', content: 'hello' }] });
    expect(plain.choices[0]!.message.tool_calls).toBeUndefined();
    const none = await client.chat.completions.create({ model: 'm', tools: weather, tool_choice: 'none', messages: [{ role: 'user', content: 'get_weather' }] });
    expect(none.choices[0]!.finish_reason).toBe('stop');
    const forced = await client.chat.completions.create({ model: 'm', tools: weather, tool_choice: { type: 'function', function: { name: 'get_weather' } }, messages: [{ role: 'user', content: 'hi' }] });
    expect(forced.choices[0]!.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather', arguments: '{"city":"hi"}' } });
    const cut = await client.chat.completions.create({ model: 'm', max_tokens: 2, messages: [{ role: 'user', content: 'a b c' }] });
    expect(cut.choices[0]!.finish_reason).toBe('length');
  });

  it('ends the reply before a stop string and names it as vLLM does (stop_reason)', async () => {
    const r = await client.chat.completions.create({ model: 'm', stop: ['c'], messages: [{ role: 'user', content: 'a b c d' }] });
    expect(r.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'echo: a b' }, stop_reason: 'c' });
    expect(r.usage?.completion_tokens).toBe(3);
  });

  it('streams a tool call as OpenAI does (name, then argument pieces), and n choices each', async () => {
    const stream = await client.chat.completions.create({ model: 'm', stream: true, n: 2, stream_options: { include_usage: true }, tools: weather, messages: [{ role: 'user', content: 'get_weather in Rome' }] });
    const args: Record<number, string> = { 0: '', 1: '' };
    const finishes: Array<string | null> = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const c of stream) {
      for (const choice of c.choices) {
        const call = choice.delta.tool_calls?.[0];
        if (call?.id) expect(call).toMatchObject({ index: 0, id: `call_fake_${choice.index}`, function: { name: 'get_weather' } });
        args[choice.index] += call?.function?.arguments ?? '';
        if (choice.finish_reason) finishes.push(choice.finish_reason);
      }
      if (c.usage) usage = c.usage;
    }
    expect(args).toEqual({ 0: '{"city":"get_weather in Rome"}', 1: '{"city":"get_weather in Rome"}' });
    expect(finishes).toEqual(['tool_calls', 'tool_calls']);
    expect(usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 2 * (1 + 3) });
    const many = await client.chat.completions.create({ model: 'm', n: 3, messages: [{ role: 'user', content: 'a b' }] });
    expect(many.choices.map((c) => [c.index, c.message.content])).toEqual([[0, 'echo: a b'], [1, 'echo: a b'], [2, 'echo: a b']]);
    expect(many.usage?.completion_tokens).toBe(9);
  });

  it('embeds a string or an array deterministically', async () => {
    const one = await client.embeddings.create({ model: 'fake-embed-1', input: 'alpha beta' });
    expect(one.data).toHaveLength(1);
    expect(one.data[0]!.embedding).toEqual(fakeEmbedding('alpha beta'));
    expect(one.usage).toEqual({ prompt_tokens: 2, total_tokens: 2 });
    const many = await client.embeddings.create({ model: 'fake-embed-1', input: ['alpha beta', 'gamma'], dimensions: 20 });
    expect(many.data.map((d) => d.index)).toEqual([0, 1]);
    expect(many.data[0]!.embedding).toHaveLength(20);
    expect(many.data[1]!.embedding).toEqual(fakeEmbedding('gamma', 20));
    expect(Math.hypot(...many.data[1]!.embedding)).toBeCloseTo(1, 6);
    expect(many.data[0]!.embedding).not.toEqual(many.data[1]!.embedding);
    expect(fake.calls.embeddings).toBe(2);
  });

  it('lists its models', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['fake-chat-1', 'fake-embed-1']);
    expect(fake.calls.models).toBe(1);
  });

  it('refuses a wrong key, and takes a rotated one', async () => {
    const wrong = new OpenAI({ baseURL: fake.url, apiKey: 'sk-wrong', maxRetries: 0 });
    await expect(wrong.models.list()).rejects.toBeInstanceOf(AuthenticationError);
    fake.apiKey = 'sk-wrong';
    await expect(wrong.models.list()).resolves.toBeDefined();
    await expect(client.models.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    fake.apiKey = 'sk-fake-1';
  });

  it('fails with a status the given number of times, then answers; counts every call', async () => {
    fake.failNext({ kind: 'status', status: 503 }, 2);
    const ask = () => client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    await expect(ask()).rejects.toMatchObject({ status: 503 });
    await expect(ask()).rejects.toBeInstanceOf(APIError);
    await expect(ask()).resolves.toMatchObject({ object: 'chat.completion' });
    expect(fake.calls.chat).toBe(3);
    fake.resetCalls();
    expect(fake.calls.chat).toBe(0);
  });

  it('fails or slows the requests of one model only (behaveFor), over what behave sets for all, until reset', async () => {
    fake.behave({ omitUsage: true });
    fake.behaveFor('broken', { failure: { kind: 'status', status: 500 } });
    fake.behaveFor('slow', { firstByteDelayMs: 150 });
    fake.behaveFor('slow', { omitUsage: false });
    const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    await expect(ask('broken')).rejects.toMatchObject({ status: 500 });
    const healthy = await ask('fine');
    expect(healthy.usage).toBeUndefined();
    const started = Date.now();
    const slow = await ask('slow');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    // Both changes of `slow` hold: its own usage is back, over the general omitUsage.
    expect(slow.usage).toEqual({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 });
    fake.reset();
    await expect(ask('broken')).resolves.toMatchObject({ object: 'chat.completion' });
  });

  it('resets the connection, or hangs until the client gives up', async () => {
    fake.failNext({ kind: 'reset' });
    await expect(client.models.list()).rejects.toBeInstanceOf(APIConnectionError);
    fake.behave({ failure: { kind: 'hang' } });
    const impatient = new OpenAI({ baseURL: fake.url, apiKey: 'sk-fake-1', maxRetries: 0, timeout: 300 });
    const started = Date.now();
    // The SDK's own time-out (under jest its abort surfaces as a connection error rather than a time-out).
    await expect(impatient.models.list()).rejects.toBeInstanceOf(APIConnectionError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(fake.calls.models).toBe(2);
  });

  it('waits before the first byte and between chunks', async () => {
    fake.behave({ firstByteDelayMs: 150, chunkDelayMs: 40 });
    const started = Date.now();
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'a b c' }] });
    const firstByte = Date.now() - started;
    for await (const c of stream) void c;
    expect(firstByte).toBeGreaterThanOrEqual(140);
    // Four words and the finish chunk, each after 40 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(150 + 5 * 40 - 20);
  });

  it('breaks a stream off midway: the SDK sees an error, not an end', async () => {
    fake.behave({ breakAfterChunks: 2 });
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'a b c d e' }] });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const c of stream) seen.push(c.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow();
    expect(seen.join('')).toBe('echo: a');
  });

  it('answers OpenAI errors for bad requests', async () => {
    await expect(client.chat.completions.create({ model: 'm' } as never)).rejects.toMatchObject({ status: 400 });
    const raw = await fetch(`${fake.url}/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer sk-fake-1' }, body: '{nope' });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { error: { message: string } }).error.message).toMatch(/parse/);
    expect((await fetch(`${fake.url}/nowhere`)).status).toBe(404);
  });
});

describe('FakeModelUpstream bound for a container network', () => {
  it('listens on the host it is given and reports the loopback address to call', async () => {
    const fake = await FakeModelUpstream.start({ host: '0.0.0.0', apiKey: 'k' });
    try {
      expect(fake.url).toBe(`http://127.0.0.1:${fake.port}/v1`);
      const client = new OpenAI({ baseURL: fake.url, apiKey: 'k', maxRetries: 0, timeout: 5000 });
      expect((await client.models.list()).data.map((m) => m.id)).toEqual(['fake-chat-1', 'fake-embed-1']);
    } finally {
      await fake.close();
    }
  });
});
