import { GatewayError } from '../gateway.errors';
import { costOf, parseModelCatalogue } from '../models/model-catalogue';
import { parseGatewayRequest, type RequestRules } from './openai-request';

const models = parseModelCatalogue('');
const rules: RequestRules = { models, defaultMaxOutputTokens: 1024, imageTokens: 50_000, media: { maxBytes: 5 * 1024 * 1024, allowLoopback: false } };
const parse = (endpoint: 'chat.completions' | 'embeddings', body: unknown, given = rules) =>
  parseGatewayRequest(endpoint, typeof body === 'string' ? body : JSON.stringify(body), given);
const refusal = (endpoint: 'chat.completions' | 'embeddings', body: unknown, given = rules): string | undefined => {
  try {
    parse(endpoint, body, given);
    return undefined;
  } catch (err) {
    return err instanceof GatewayError ? `${err.status} ${err.code} ${err.param ?? '-'}` : String(err);
  }
};

describe('parseGatewayRequest', () => {
  const user = { role: 'user', content: 'hello world' };

  it('keeps the body as sent and estimates generously', () => {
    const body = { model: 'fake-chat-1', messages: [user], temperature: 0.2, tools: [{ type: 'function' }], max_tokens: 10 };
    const r = parse('chat.completions', body);
    expect(r.body).toEqual(body);
    expect(r).toMatchObject({ endpoint: 'chat.completions', stream: false, outputTokens: 10, model: { id: 'fake-chat-1' } });
    expect(r.inputTokens).toBeGreaterThanOrEqual(2);
    expect(parse('chat.completions', { model: 'fake-chat-1', messages: [user] }).outputTokens).toBe(1024);
    expect(parse('chat.completions', { model: 'fake-chat-1', messages: [user], stream: true, stream_options: { include_usage: false } }).stream).toBe(true);
  });

  it('bounds tools at OpenAI\'s 128', () => {
    const tools = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'function', function: { name: `t${i}` } }));
    expect(refusal('chat.completions', { model: 'fake-chat-1', messages: [user], tools: tools(128) })).toBeUndefined();
    expect(refusal('chat.completions', { model: 'fake-chat-1', messages: [user], tools: tools(129) })).toBe('400 invalid_request tools');
    expect(refusal('chat.completions', { model: 'fake-chat-1', messages: [user], tools: { a: 1 } })).toBe('400 invalid_request tools');
  });

  it('accepts content parts and assistant tool calls without content', () => {
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://x/y.png' } }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'done' },
    ];
    expect(parse('chat.completions', { model: 'fake-chat-1', messages }).inputTokens).toBeGreaterThan(50_000);
  });

  describe('fields that change the operator\'s cost or data handling', () => {
    const base = { model: 'fake-chat-1', messages: [user] };

    it.each([
      ['store', true],
      ['metadata', { team: 'a' }],
      ['service_tier', 'priority'],
      ['service_tier', 'auto'],
      ['web_search_options', {}],
      ['prediction', { type: 'content', content: 'x' }],
      ['audio', { voice: 'alloy', format: 'mp3' }],
      ['modalities', ['text', 'audio']],
      ['prompt_cache_retention', '24h'],
    ])('refuses %s: %j with a 400 naming the field', (field, value) => {
      expect(refusal('chat.completions', { ...base, [field]: value })).toBe(`400 invalid_request ${field}`);
    });

    it('says why, in the message', () => {
      expect(() => parse('chat.completions', { ...base, service_tier: 'flex' })).toThrow(/^service_tier is not supported by this gateway: it changes the provider's price/);
      expect(() => parse('chat.completions', { ...base, store: true })).toThrow(/Send store: false or leave it out/);
    });

    it.each([
      ['store', false],
      ['store', null],
      ['metadata', null],
      ['modalities', ['text']],
      ['prompt_cache_retention', 'in_memory'],
    ])('accepts %s: %j (it changes nothing)', (field, value) => {
      expect(refusal('chat.completions', { ...base, [field]: value })).toBeUndefined();
    });

    it('passes every other field through untouched, unknown ones included (CONTRACT.md section 7)', () => {
      const extra = { seed: 7, logit_bias: { 50256: -100 }, user: 'u1', reasoning_effort: 'low', verbosity: 'low', prompt_cache_key: 'k', some_vendor_option: { a: 1 } };
      expect(parse('chat.completions', { ...base, ...extra }).body).toMatchObject(extra);
    });
  });

  describe('content parts', () => {
    const ask = (...content: unknown[]) => ({ model: 'fake-chat-1', messages: [user, { role: 'user', content }] });

    it.each([
      [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }, 'input_audio'],
      [{ type: 'audio_url', audio_url: { url: 'https://x/a.wav' } }, 'audio_url'],
      [{ type: 'video_url', video_url: { url: 'https://x/v.mp4' } }, 'video_url'],
      [{ type: 'file', file: { file_data: 'data:application/pdf;base64,AAAA' } }, 'file'],
      [{ type: 'image_embeds', image_embeds: 'AAAA' }, 'image_embeds'],
    ])('refuses a %j part, naming it', (part, type) => {
      expect(refusal('chat.completions', ask({ type: 'text', text: 'hi' }, part))).toBe('400 invalid_request messages[1].content[1].type');
      expect(() => parse('chat.completions', ask(part))).toThrow(`messages[1].content[0]: content parts of type ${type} are not supported by this gateway`);
    });

    it('accepts text, image_url and refusal parts', () => {
      expect(refusal('chat.completions', ask({ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }))).toBeUndefined();
      expect(refusal('chat.completions', { model: 'fake-chat-1', messages: [user, { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] }, user] })).toBeUndefined();
    });
  });

  describe('image URLs', () => {
    const ask = (image_url: unknown) => ({ model: 'fake-chat-1', messages: [{ role: 'system', content: 's' }, { role: 'user', content: [{ type: 'text', text: 'what' }, { type: 'image_url', image_url }] }] });

    it.each([
      ['http://images.example.com/cat.png', 'only https: and data: image URLs are accepted.'],
      ['https://169.254.169.254/latest/meta-data/iam/security-credentials/', 'the image URL names a private or reserved address.'],
      ['https://10.0.0.12/x.png', 'the image URL names a private or reserved address.'],
      ['https://u:p@images.example.com/cat.png', 'the image URL must not carry credentials (user:password@).'],
      ['data:text/plain;base64,AAAA', 'a data: URL must hold an image of type image/png, image/jpeg, image/gif, image/webp.'],
    ])('refuses %s with a 400 naming the URL\'s place', (url, reason) => {
      expect(refusal('chat.completions', ask({ url }))).toBe('400 invalid_request messages[1].content[1].image_url.url');
      expect(() => parse('chat.completions', ask({ url }))).toThrow(`messages[1].content[1].image_url.url: ${reason}`);
    });

    it('bounds a data: URL by the media policy', () => {
      const url = `data:image/png;base64,${Buffer.alloc(2000).toString('base64')}`;
      expect(refusal('chat.completions', ask({ url }))).toBeUndefined();
      expect(refusal('chat.completions', ask({ url }), { ...rules, media: { maxBytes: 1999, allowLoopback: false } })).toBe('400 invalid_request messages[1].content[1].image_url.url');
    });

    it('lists the https images, to be fetched for providers that fetch', () => {
      const r = parse('chat.completions', ask({ url: 'https://images.example.com/cat.png', detail: 'low' }));
      expect(r.remoteImages).toEqual([{ target: { url: 'https://images.example.com/cat.png', detail: 'low' }, url: new URL('https://images.example.com/cat.png'), param: 'messages[1].content[1].image_url.url' }]);
      // The target is the body's own object: replacing its url changes what is sent.
      r.remoteImages![0]!.target['url'] = 'data:image/png;base64,AA';
      expect(r.body).toMatchObject({ messages: [{}, { content: [{}, { image_url: { url: 'data:image/png;base64,AA', detail: 'low' } }] }] });
      expect(parse('chat.completions', ask({ url: 'data:image/png;base64,AA' })).remoteImages).toBeUndefined();
      expect(parse('chat.completions', { model: 'fake-chat-1', messages: [user] }).remoteImages).toBeUndefined();
    });

    it('takes the bare-string form, as OpenAI\'s object', () => {
      const r = parse('chat.completions', ask('https://images.example.com/cat.png'));
      expect(r.body).toMatchObject({ messages: [{}, { content: [{}, { image_url: { url: 'https://images.example.com/cat.png' } }] }] });
      expect(r.remoteImages).toHaveLength(1);
      expect(refusal('chat.completions', ask('https://127.0.0.1/x.png'))).toBe('400 invalid_request messages[1].content[1].image_url');
      expect(refusal('chat.completions', ask(null))).toBe('400 invalid_request messages[1].content[1].image_url');
    });
  });

  describe('the estimate (admission) and the output cap', () => {
    const base = { model: 'fake-chat-1', messages: [user] };
    const bytes = (body: unknown) => Buffer.byteLength(JSON.stringify(body));

    it('counts every byte of the body as a token: any language, tools and response_format schemas', () => {
      const plain = parse('chat.completions', base).inputTokens;
      expect(plain).toBeGreaterThanOrEqual(bytes(base));
      // Three bytes a character: a CJK prompt of 1,000 characters is up to 3,000 tokens, not 500.
      expect(parse('chat.completions', { ...base, messages: [{ role: 'user', content: '漢'.repeat(1000) }] }).inputTokens).toBeGreaterThan(3000);
      const tools = [{ type: 'function', function: { name: 'lookup', description: 'd'.repeat(4000), parameters: { type: 'object' } } }];
      expect(parse('chat.completions', { ...base, tools }).inputTokens - plain).toBeGreaterThan(4000);
      const schema = { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object', description: 'x'.repeat(6000) } } };
      expect(parse('chat.completions', { ...base, response_format: schema }).inputTokens - plain).toBeGreaterThan(6000);
    });

    it('counts an image part as GATEWAY_IMAGE_TOKENS, not by its URL', () => {
      const image = (url: string) => ({ ...base, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] });
      const small = parse('chat.completions', image('https://x/y.png'), { ...rules, imageTokens: 7000 }).inputTokens;
      const inline = parse('chat.completions', image(`data:image/png;base64,${'A'.repeat(200_000)}`), { ...rules, imageTokens: 7000 }).inputTokens;
      expect(small).toBeGreaterThanOrEqual(7000);
      expect(inline).toBe(small);
    });

    it('reserves max_tokens (or max_completion_tokens, or the default) times n', () => {
      expect(parse('chat.completions', { ...base, max_tokens: 10, n: 3 }).outputTokens).toBe(30);
      expect(parse('chat.completions', { ...base, max_completion_tokens: 7, n: 2 }).outputTokens).toBe(14);
      expect(parse('chat.completions', { ...base, n: 4 }).outputTokens).toBe(4096);
      expect(parse('chat.completions', { ...base, n: null, max_tokens: null }).outputTokens).toBe(1024);
    });

    it('asks the upstream for no more output per choice than was reserved', () => {
      expect(parse('chat.completions', base).body).toMatchObject({ max_completion_tokens: 1024 });
      expect(parse('chat.completions', base).body).not.toHaveProperty('max_tokens');
      expect(parse('chat.completions', { ...base, max_tokens: 50 }).body).not.toHaveProperty('max_completion_tokens');
      expect(parse('chat.completions', { ...base, max_tokens: 500, max_completion_tokens: 20 }).body).toMatchObject({ max_tokens: 20, max_completion_tokens: 20 });
    });

    it.each([
      [{ n: 0 }, '400 invalid_request n'],
      [{ n: 1.5 }, '400 invalid_request n'],
      [{ n: 129 }, '400 invalid_request n'],
      [{ n: '2' }, '400 invalid_request n'],
      [{ max_tokens: -1 }, '400 invalid_request max_tokens'],
      [{ max_tokens: 'lots' }, '400 invalid_request max_tokens'],
      [{ max_completion_tokens: 1e20 }, '400 invalid_request max_completion_tokens'],
    ])('refuses %j -> %s', (extra, expected) => {
      expect(refusal('chat.completions', { ...base, ...extra })).toBe(expected);
    });
  });

  it.each([
    ['', '400 invalid_request -'],
    ['{"model":', '400 invalid_json -'],
    ['[]', '400 invalid_request -'],
    [{ messages: [{ role: 'user', content: 'x' }] }, '400 invalid_request model'],
    [{ model: 'nope', messages: [{ role: 'user', content: 'x' }] }, '404 model_not_found model'],
    [{ model: 'fake-chat-1' }, '400 invalid_request messages'],
    [{ model: 'fake-chat-1', messages: [] }, '400 invalid_request messages'],
    [{ model: 'fake-chat-1', messages: ['hi'] }, '400 invalid_request messages[0]'],
    [{ model: 'fake-chat-1', messages: [{ role: 'root', content: 'x' }] }, '400 invalid_request messages[0].role'],
    [{ model: 'fake-chat-1', messages: [{ role: 'user' }] }, '400 invalid_request messages[0].content'],
    [{ model: 'fake-chat-1', messages: [{ role: 'user', content: 5 }] }, '400 invalid_request messages[0].content'],
    [{ model: 'fake-chat-1', messages: [{ role: 'user', content: [{ text: 'no type' }] }] }, '400 invalid_request messages[0].content'],
    [{ model: 'fake-chat-1', messages: [{ role: 'user', content: 'x' }], stream: 'true' }, '400 invalid_request stream'],
    [{ model: 'fake-chat-1', messages: [{ role: 'user', content: 'x' }], stream_options: 'usage' }, '400 invalid_request stream_options'],
    [{ model: 'fake-chat-1', messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: 1 } }, '400 invalid_request stream_options.include_usage'],
    [`{"model":"fake-chat-1","messages":[{"role":"user","content":"x"}],"x":${'['.repeat(65)}${']'.repeat(65)}}`, '400 invalid_request -'],
  ])('chat %j -> %s', (body, expected) => {
    expect(refusal('chat.completions', body)).toBe(expected);
  });

  it('a deeply nested string is not nesting', () => {
    expect(refusal('chat.completions', { model: 'fake-chat-1', messages: [{ role: 'user', content: '['.repeat(500) }] })).toBeUndefined();
  });

  it.each([
    [{ model: 'fake-embed-1', input: 'x' }, undefined],
    [{ model: 'fake-embed-1', input: ['a', 'b'] }, undefined],
    [{ model: 'fake-embed-1', input: [1, 2, 3] }, undefined],
    [{ model: 'fake-embed-1', input: [[1, 2], [3]] }, undefined],
    [{ model: 'fake-embed-1', input: '' }, '400 invalid_request input'],
    [{ model: 'fake-embed-1', input: [] }, '400 invalid_request input'],
    [{ model: 'fake-embed-1', input: [{ text: 'x' }] }, '400 invalid_request input'],
    [{ model: 'fake-embed-1' }, '400 invalid_request input'],
    [{ model: 'fake-embed-1', input: 'x', stream: true }, '400 invalid_request stream'],
    [{ model: 'fake-embed-1', input: 'x', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://169.254.169.254/' } }] }] }, '400 invalid_request messages'],
  ])('embeddings %j -> %s', (body, expected) => {
    expect(refusal('embeddings', body)).toBe(expected);
  });
});

describe('model catalogue', () => {
  it('prices per 1,000 tokens, rounded up', () => {
    const m = models.get('fake-chat-1')!;
    expect(costOf(m, 3, 4)).toBe(11);
    expect(costOf({ ...m, inputPer1k: 1, outputPer1k: 0 }, 1, 0)).toBe(1);
    expect(costOf(m, 0, 0)).toBe(0);
  });

  it('reads GATEWAY_MODELS and refuses what it cannot price', () => {
    const custom = parseModelCatalogue('[{"id":"m1","inputPer1k":5,"outputPer1k":7},{"id":"m2","provider":"hosted","inputPer1k":0,"outputPer1k":0}]');
    expect([...custom.values()]).toEqual([
      { id: 'm1', provider: 'inhouse', inputPer1k: 5, outputPer1k: 7 },
      { id: 'm2', provider: 'hosted', inputPer1k: 0, outputPer1k: 0 },
    ]);
    for (const bad of ['{', '[]', '{}', '[{"id":"m"}]', '[{"id":"m","inputPer1k":1.5,"outputPer1k":1}]', '[{"id":"m","provider":"x","inputPer1k":1,"outputPer1k":1}]']) {
      expect(() => parseModelCatalogue(bad)).toThrow();
    }
  });

  it('reads an optional cachedInputPer1k: an integer >= 0 and at most inputPer1k (so the estimate still bounds the cost)', () => {
    const custom = parseModelCatalogue('[{"id":"m1","inputPer1k":10,"outputPer1k":7,"cachedInputPer1k":5},{"id":"m2","inputPer1k":10,"outputPer1k":7,"cachedInputPer1k":10},{"id":"m3","inputPer1k":10,"outputPer1k":7,"cachedInputPer1k":0}]');
    expect([...custom.values()].map((m) => m.cachedInputPer1k)).toEqual([5, 10, 0]);
    for (const cached of ['11', '-1', '2.5', '"5"', 'null']) {
      expect(() => parseModelCatalogue(`[{"id":"m","inputPer1k":10,"outputPer1k":7,"cachedInputPer1k":${cached}}]`)).toThrow(/cachedInputPer1k/);
    }
    expect(models.get('gpt-4o-mini')).toMatchObject({ inputPer1k: 150, cachedInputPer1k: 75 });
    expect(models.get('fake-chat-1')?.cachedInputPer1k).toBeUndefined();
  });

  it('costOf: cached tokens (part of the input) at cachedInputPer1k, the rest at inputPer1k, rounded up once; without a cached price all at inputPer1k', () => {
    const mini = models.get('gpt-4o-mini')!;
    expect(costOf(mini, 1000, 100, 400)).toBe(Math.ceil((600 * 150 + 400 * 75 + 100 * 600) / 1000));
    expect(costOf(mini, 1000, 100)).toBe(costOf(mini, 1000, 100, 0));
    // A cached count above the input (a provider's error) is all of the input, never more.
    expect(costOf(mini, 1000, 0, 5000)).toBe(costOf(mini, 1000, 0, 1000));
    expect(costOf(mini, 1000, 0, 1000)).toBe(75);
    const chat = models.get('fake-chat-1')!;
    expect(costOf(chat, 1000, 100, 400)).toBe(costOf(chat, 1000, 100));
  });
});
