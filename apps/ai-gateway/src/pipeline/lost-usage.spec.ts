import { costOf, parseModelCatalogue } from '../models/model-catalogue';
import { parseGatewayRequest, type RequestRules } from '../openai/openai-request';
import { SseRelay } from '../providers/sse-relay';
import { jsonUsage } from '../providers/usage';
import { lostUsage } from './lost-usage';

const models = parseModelCatalogue('');
const model = models.get('fake-chat-1')!;
const IMAGE_TOKENS = 50_000;
const rules: RequestRules = { models, defaultMaxOutputTokens: 1024, imageTokens: IMAGE_TOKENS, media: { maxBytes: 5 * 1024 * 1024, allowLoopback: false } };
const parse = (body: unknown) => parseGatewayRequest('chat.completions', JSON.stringify(body), rules);
const event = (delta: unknown, finish: string | null = null): Buffer => Buffer.from(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);

/** A prompt with an image, a tool definition and an earlier tool call: its text alone is a few dozen characters. */
const agentTurn = {
  model: 'fake-chat-1',
  max_tokens: 300,
  tools: [{ type: 'function', function: { name: 'lookup_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'what is in this picture?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(2000)}` } }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
  ],
};

describe('lostUsage: what a request costs when its usage is lost after it was sent', () => {
  it('charges the admission estimate for the input: an image counts GATEWAY_IMAGE_TOKENS, tool calls sent count their bytes', () => {
    const request = parse(agentTurn);
    expect(request.inputTokens).toBeGreaterThan(IMAGE_TOKENS);
    const usage = lostUsage({ admittedInputTokens: request.inputTokens, reservedOutputTokens: request.outputTokens, deliveredOutputTokens: 3, read: 'stream' });
    expect(usage).toEqual({ inputTokens: request.inputTokens, outputTokens: 3, estimated: true });
    expect(costOf(model, usage.inputTokens, usage.outputTokens)).toBeGreaterThanOrEqual(costOf(model, request.inputTokens, 0));
  });

  it("a stream cut after a tool call: the call's name and arguments are the output delivered", () => {
    const request = parse({ ...agentTurn, stream: true });
    const relay = new SseRelay(false);
    relay.push(event({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'c2', type: 'function', function: { name: 'lookup_weather', arguments: '' } }] }));
    relay.push(event({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }));
    relay.push(event({ tool_calls: [{ index: 0, function: { arguments: '"Lyon"}' } }] }));
    // No usage chunk came: the relay's estimate is 'lookup_weather{"city":"Lyon"}', 29 characters.
    const delivered = relay.finalUsage('');
    expect(delivered).toMatchObject({ outputTokens: 8, estimated: true });
    const usage = lostUsage({ admittedInputTokens: request.inputTokens, reservedOutputTokens: request.outputTokens, deliveredOutputTokens: delivered.outputTokens, read: 'stream' });
    expect(usage).toEqual({ inputTokens: request.inputTokens, outputTokens: 8, estimated: true });
  });

  it('a non-streamed answer given up on (time-out, cut, abandoned): the output reserved, or what was read when more', () => {
    const request = parse(agentTurn);
    expect(request.outputTokens).toBe(300);
    const given = (delivered: number) => lostUsage({ admittedInputTokens: request.inputTokens, reservedOutputTokens: request.outputTokens, deliveredOutputTokens: delivered, read: 'lost' });
    expect(given(0)).toEqual({ inputTokens: request.inputTokens, outputTokens: 300, estimated: true });
    expect(given(450).outputTokens).toBe(450);
    expect(costOf(model, given(0).inputTokens, given(0).outputTokens)).toBe(costOf(model, request.inputTokens, request.outputTokens));
  });

  it('a whole non-streamed answer without usage: the output it held, tool calls included, not the reservation', () => {
    const request = parse(agentTurn);
    const answer = Buffer.from(JSON.stringify({ choices: [{ message: { content: null, tool_calls: [{ function: { name: 'lookup_weather', arguments: '{"city":"Lyon"}' } }] } }] }));
    const read = jsonUsage('chat.completions', request.body, answer);
    expect(read).toMatchObject({ outputTokens: 8, estimated: true });
    const usage = lostUsage({ admittedInputTokens: request.inputTokens, reservedOutputTokens: request.outputTokens, deliveredOutputTokens: read.outputTokens, read: 'whole' });
    expect(usage).toEqual({ inputTokens: request.inputTokens, outputTokens: 8, estimated: true });
  });

  it('is never below what the provider layer estimated from the text (the characters sent, four a token)', () => {
    // Any text: its UTF-8 bytes are at least its UTF-16 length, so the admission estimate bounds ceil(chars / 4).
    for (const text of ['hello', '漢'.repeat(500), '😀'.repeat(300), 'a'.repeat(10_000)]) {
      const body = { model: 'fake-chat-1', messages: [{ role: 'user', content: text }] };
      const request = parse(body);
      const fromText = jsonUsage('chat.completions', request.body, Buffer.from('{}')).inputTokens;
      const usage = lostUsage({ admittedInputTokens: request.inputTokens, reservedOutputTokens: request.outputTokens, deliveredOutputTokens: 0, read: 'stream' });
      expect(usage.inputTokens).toBeGreaterThanOrEqual(fromText);
    }
  });

  it('embeddings reserve no output and are charged none', () => {
    const request = parseGatewayRequest('embeddings', JSON.stringify({ model: 'fake-embed-1', input: 'hello world' }), rules);
    const usage = lostUsage({ admittedInputTokens: request.inputTokens, reservedOutputTokens: request.outputTokens, deliveredOutputTokens: 0, read: 'lost' });
    expect(usage).toEqual({ inputTokens: request.inputTokens, outputTokens: 0, estimated: true });
  });
});
