import { GatewayError } from '../gateway.errors';
import { parseModelCatalogue } from '../models/model-catalogue';
import type { GatewayRequest, RequestRules } from '../openai/openai-request';
import { anthropicMessages, messagesTranslation } from './anthropic-messages';
import type { Dialect, DialectContext } from './dialect';
import { openAiResponses, responsesTranslation } from './openai-responses';

/** Upstream chat-completion chunks as the relay passes them on. */
const sse = (...chunks: unknown[]): Buffer => Buffer.from(chunks.map((c) => `data: ${typeof c === 'string' ? c : JSON.stringify(c)}\n\n`).join(''));
const delta = (d: Record<string, unknown>, finish: string | null = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] });
const usage = { choices: [], usage: { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 } };

/** The events written: [event name, data]. */
function events(bytes: Array<Buffer | undefined>): Array<[string, Record<string, unknown>]> {
  return Buffer.concat(bytes.filter((b): b is Buffer => b !== undefined))
    .toString('utf8')
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => {
      const [name, data] = e.split('\n');
      return [name!.replace('event: ', ''), JSON.parse(data!.replace('data: ', '')) as Record<string, unknown>];
    });
}

const context = (body: Record<string, unknown> = {}): DialectContext => ({ requestId: 'r-1', model: 'm', body });

describe('Anthropic Messages dialect', () => {
  const base = { model: 'm', max_tokens: 10 };

  it('puts tool results first as tool messages, a result\'s images and the other blocks after them; drops thinking', () => {
    const chat = messagesTranslation.toChat({
      ...base,
      system: [{ type: 'text', text: 'sys' }],
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'text', text: 'let me see' }, { type: 'tool_use', id: 't1', name: 'w', input: { c: 'P' } }, { type: 'tool_use', id: 't2', name: 'w', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'sunny' }, { type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] },
            { type: 'tool_result', tool_use_id: 't2', content: 'down', is_error: true },
            { type: 'text', text: 'thanks' },
          ],
        },
      ],
      tools: [{ name: 'w', input_schema: { type: 'object' } }],
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });
    expect(chat).toEqual({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: 'let me see',
          tool_calls: [
            { id: 't1', type: 'function', function: { name: 'w', arguments: '{"c":"P"}' } },
            { id: 't2', type: 'function', function: { name: 'w', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 't1', content: 'sunny' },
        { role: 'tool', tool_call_id: 't2', content: 'Error: down' },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }, { type: 'text', text: 'thanks' }] },
      ],
      tools: [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
  });

  it('refuses what it cannot translate with a 400 naming the field', () => {
    const refused = (body: Record<string, unknown>, param: string) => {
      const err = (() => {
        try {
          messagesTranslation.toChat({ ...base, messages: [{ role: 'user', content: 'x' }], ...body });
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 400, param });
    };
    refused({ max_tokens: 0 }, 'max_tokens');
    refused({ messages: [{ role: 'system', content: 'x' }] }, 'messages[0].role');
    refused({ messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] }, 'messages[0].content[0].type');
    refused({ messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x' }] }] }, 'messages[0].content[0]');
    refused({ tools: [{ name: 'w', input_schema: {} }], tool_choice: { type: 'sometimes' } }, 'tool_choice');
    refused({ tool_choice: { type: 'any' } }, 'tool_choice');
    // auto without tools is nothing to send: OpenAI would refuse a tool_choice without tools.
    expect(messagesTranslation.toChat({ ...base, messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'auto' } })).not.toHaveProperty('tool_choice');
  });

  it('answers a completion as a message: text and tool_use blocks, stop_reason, usage with cached tokens apart', () => {
    const answer = JSON.parse(
      messagesTranslation.answer(
        {
          choices: [{ index: 0, finish_reason: 'tool_calls', message: { content: 'ok', tool_calls: [{ id: 'c1', function: { name: 'w', arguments: '{"a":1}' } }, { id: 'c2', function: { name: 'w', arguments: 'not json' } }] } }],
          usage: { prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } },
        },
        context(),
      ),
    );
    expect(answer).toEqual({
      id: 'msg_r1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [
        { type: 'text', text: 'ok' },
        { type: 'tool_use', id: 'c1', name: 'w', input: { a: 1 } },
        { type: 'tool_use', id: 'c2', name: 'w', input: { _raw: 'not json' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 6, output_tokens: 3, cache_read_input_tokens: 4 },
    });
    const refusal = JSON.parse(messagesTranslation.refusal(429, Buffer.from('{"error":{"message":"slow down"}}')));
    expect(refusal).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
  });

  it('streams text then two tool calls as three blocks, each started and stopped, then message_delta with usage and message_stop', () => {
    const t = messagesTranslation.stream(context());
    const out = [
      t.push(sse(delta({ role: 'assistant', content: '' }), delta({ content: 'Hi' }))),
      t.push(sse(delta({ tool_calls: [{ index: 0, id: 'a', function: { name: 'f', arguments: '' } }] }), delta({ tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] }))),
      t.push(sse(delta({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }), delta({ tool_calls: [{ index: 1, id: 'b', function: { name: 'g', arguments: '{}' } }] }))),
      t.push(sse(delta({}, 'tool_calls'), usage, '[DONE]')),
      t.end(),
    ];
    const seen = events(out);
    expect(seen.map(([name, data]) => `${name}${data.index === undefined ? '' : `:${String(data.index)}`}`)).toEqual([
      'message_start',
      'ping',
      'content_block_start:0',
      'content_block_delta:0',
      'content_block_stop:0',
      'content_block_start:1',
      'content_block_delta:1',
      'content_block_delta:1',
      'content_block_stop:1',
      'content_block_start:2',
      'content_block_delta:2',
      'content_block_stop:2',
      'message_delta',
      'message_stop',
    ]);
    expect(seen[5]![1]).toMatchObject({ content_block: { type: 'tool_use', id: 'a', name: 'f', input: {} } });
    expect(seen[6]![1]).toMatchObject({ delta: { type: 'input_json_delta', partial_json: '{"x":' } });
    expect(seen[12]![1]).toEqual({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 7, output_tokens: 5 } });
  });

  it('an upstream error event midway becomes an Anthropic error event, with nothing after it; a stream without [DONE] is closed at its end', () => {
    const t = messagesTranslation.stream(context());
    const out = [t.push(sse(delta({ content: 'Hi' }))), t.push(sse({ error: { message: 'broke', type: 'server_error', code: 'provider_error' } })), t.push(sse('[DONE]')), t.end()];
    const seen = events(out);
    expect(seen.at(-1)).toEqual(['error', { type: 'error', error: { type: 'api_error', message: 'broke' } }]);
    const clean = messagesTranslation.stream(context());
    const closed = events([clean.push(sse(delta({ content: 'Hi' }), delta({}, 'length'))), clean.end()]);
    expect(closed.slice(-3).map(([n]) => n)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(closed.at(-2)![1]).toMatchObject({ delta: { stop_reason: 'max_tokens' } });
  });
});

describe('OpenAI Responses dialect', () => {
  it('merges function calls in a row into one assistant turn; text.format becomes response_format; developer messages kept', () => {
    const chat = responsesTranslation.toChat({
      model: 'm',
      instructions: 'sys',
      input: [
        { role: 'developer', content: 'dev' },
        { role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'input_image', image_url: 'data:image/png;base64,AA', detail: 'low' }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'g', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
      ],
      text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' }, strict: true } },
      max_output_tokens: 9,
      stream: true,
    });
    expect(chat).toEqual({
      model: 'm',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'developer', content: 'dev' },
        { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA', detail: 'low' } }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } },
            { id: 'c2', type: 'function', function: { name: 'g', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'one' },
        { role: 'tool', tool_call_id: 'c2', content: 'two' },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' }, strict: true } },
      max_completion_tokens: 9,
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('streams text then a function call as two output items with their own indexes, then response.completed with both and usage', () => {
    const t = responsesTranslation.stream(context({ input: 'x' }));
    const out = [
      t.push(sse(delta({ content: 'Hi' }), delta({ tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{"a"' } }] }))),
      t.push(sse(delta({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }), delta({}, 'tool_calls'), usage, '[DONE]')),
      t.end(),
    ];
    const seen = events(out);
    expect(seen.map(([n]) => n)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(seen.map(([, d]) => d.sequence_number)).toEqual(seen.map((_, i) => i));
    expect(seen[8]![1]).toMatchObject({ output_index: 1, item: { type: 'function_call', call_id: 'c', name: 'f', arguments: '' } });
    expect(seen[11]![1]).toMatchObject({ output_index: 1, arguments: '{"a":1}' });
    const completed = seen.at(-1)![1].response as Record<string, unknown>;
    expect(completed).toMatchObject({
      status: 'completed',
      output_text: 'Hi',
      output: [{ type: 'message', content: [{ text: 'Hi' }] }, { type: 'function_call', arguments: '{"a":1}', status: 'completed' }],
      usage: { input_tokens: 7, output_tokens: 5, total_tokens: 12 },
    });
  });
});

describe("a dialect's images, held to the media rule", () => {
  const rules: RequestRules = { models: parseModelCatalogue(''), defaultMaxOutputTokens: 64, imageTokens: 1000, media: { maxBytes: 1000, allowLoopback: false } };
  /** The request a dialect's body becomes, as the handler makes it; or the refusal's param and message. */
  const through = (dialect: Dialect, body: Record<string, unknown>): GatewayRequest | { param: string | null; message: string } => {
    try {
      return dialect.request(JSON.stringify(body), rules);
    } catch (err) {
      if (err instanceof GatewayError) return { param: err.param, message: err.message };
      throw err;
    }
  };
  const anthropic = (...content: unknown[]) => ({
    model: 'fake-chat-1',
    max_tokens: 10,
    system: 'be brief',
    messages: [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content },
    ],
  });
  const responses = (...content: unknown[]) => ({ model: 'fake-chat-1', instructions: 'sys', input: [{ role: 'user', content: 'first' }, { role: 'user', content }] });

  it('Anthropic: a url source naming a private address is refused at the client\'s own place (source.url)', () => {
    expect(through(anthropicMessages, anthropic({ type: 'text', text: 'what' }, { type: 'image', source: { type: 'url', url: 'https://169.254.169.254/latest/meta-data/' } }))).toEqual({
      param: 'messages[2].content[1].source.url',
      message: 'messages[2].content[1].source.url: the image URL names a private or reserved address.',
    });
    expect(through(anthropicMessages, anthropic({ type: 'image', source: { type: 'url', url: 'http://images.example.com/x.png' } }))).toMatchObject({ param: 'messages[2].content[0].source.url' });
  });

  it('Anthropic: an image inside a tool result is checked too', () => {
    const body = {
      ...anthropic(),
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'w', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'image', source: { type: 'url', url: 'https://10.0.0.3/x.png' } }] }] },
      ],
    };
    expect(through(anthropicMessages, body)).toMatchObject({ param: 'messages[2].content[0].content[0].source.url' });
  });

  it('Anthropic: a base64 source must be an image type, and is bounded', () => {
    expect(through(anthropicMessages, anthropic({ type: 'image', source: { type: 'base64', media_type: 'application/pdf', data: 'AAAA' } }))).toMatchObject({
      param: 'messages[2].content[0].source.media_type',
    });
    expect(through(anthropicMessages, anthropic({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: Buffer.alloc(1001).toString('base64') } }))).toEqual({
      param: 'messages[2].content[0].source.data',
      message: 'messages[2].content[0].source.data: the image is larger than 1000 bytes.',
    });
  });

  it('Anthropic: a public https image is listed to be fetched, named by its source', () => {
    const r = through(anthropicMessages, anthropic({ type: 'image', source: { type: 'url', url: 'https://images.example.com/cat.png' } }, { type: 'text', text: 'what' })) as GatewayRequest;
    expect(r.remoteImages?.map((i) => [i.url.href, i.param])).toEqual([['https://images.example.com/cat.png', 'messages[2].content[0].source.url']]);
  });

  it('Responses: an input_image URL naming a private address is refused at input[i].content[j].image_url', () => {
    expect(through(openAiResponses, responses({ type: 'input_text', text: 'what' }, { type: 'input_image', image_url: 'https://[::ffff:127.0.0.1]/x.png' }))).toEqual({
      param: 'input[1].content[1].image_url',
      message: 'input[1].content[1].image_url: the image URL names a private or reserved address.',
    });
    const r = through(openAiResponses, responses({ type: 'input_image', image_url: 'https://images.example.com/cat.png', detail: 'high' })) as GatewayRequest;
    expect(r.remoteImages?.map((i) => i.param)).toEqual(['input[1].content[0].image_url']);
  });

  it('Responses: file and audio inputs stay refused (the gateway does not count them)', () => {
    for (const part of [
      { type: 'input_file', file_data: 'data:application/pdf;base64,AAAA', filename: 'a.pdf' },
      { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
    ]) {
      expect(through(openAiResponses, responses(part))).toMatchObject({ param: 'input[1].content[0]' });
    }
  });
});
