import type { IncomingHttpHeaders } from 'node:http';
import type { Exchange } from '@flagship/lean-http';
import { GatewayError } from '../gateway.errors';
import { parseModelCatalogue } from '../models/model-catalogue';
import type { GatewayRequest, RequestRules } from '../openai/openai-request';
import { anthropicMessages } from './anthropic-messages';
import type { Dialect } from './dialect';
import { DIALECTS, dialectOf } from './dialects';
import { openAiResponses } from './openai-responses';
import { chatCompletions, embeddings } from './pass-through';

const rules: RequestRules = { models: parseModelCatalogue(''), defaultMaxOutputTokens: 64, imageTokens: 1000, media: { maxBytes: 1000, allowLoopback: false } };

/** The smallest body each API takes, asking for fake-chat-1 (fake-embed-1) with its output limit at 10 where it has one. */
const SMALLEST: Record<string, Record<string, unknown>> = {
  'chat.completions': { model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 },
  embeddings: { model: 'fake-embed-1', input: 'hi' },
  messages: { model: 'fake-chat-1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
  responses: { model: 'fake-chat-1', input: 'hi', max_output_tokens: 10 },
};

/** The refusal's status, code and param, or the request. */
function parsed(dialect: Dialect, body: unknown): GatewayRequest | { status: number; code: string; param: string | null } {
  try {
    return dialect.request(typeof body === 'string' ? body : JSON.stringify(body), rules);
  } catch (err) {
    if (err instanceof GatewayError) return { status: err.status, code: err.code, param: err.param };
    throw err;
  }
}

const exchange = (route: string, url: string): Exchange => ({ route, req: { url } }) as unknown as Exchange;

describe('the dialects', () => {
  it('are one per path and one per ledger endpoint', () => {
    expect(DIALECTS.map((d) => [d.route, d.path])).toEqual([
      ['chat.completions', '/v1/chat/completions'],
      ['embeddings', '/v1/embeddings'],
      ['messages', '/v1/messages'],
      ['responses', '/v1/responses'],
    ]);
  });

  it.each(DIALECTS.map((d) => [d.route, d] as const))('%s: its smallest body as the gateway\'s request', (route, dialect) => {
    const body = SMALLEST[route]!;
    const r = parsed(dialect, body) as GatewayRequest;
    expect(r).toMatchObject({ route, endpoint: route === 'embeddings' ? 'embeddings' : 'chat.completions', stream: false, outputTokens: route === 'embeddings' ? 0 : 10 });
    expect(r.model.id).toBe(body.model);
    // The input estimate bounds the body's bytes, as sent or as translated.
    expect(r.inputTokens).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(r.body)));
    if (dialect === anthropicMessages || dialect === openAiResponses) {
      expect(r.original).toEqual(body);
      expect(r.body).toMatchObject({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] });
    } else {
      // Passed on as sent.
      expect(r.body).toEqual(body);
      expect(r.original).toBeUndefined();
    }
  });

  it.each(DIALECTS.map((d) => [d.route, d] as const))('%s: bad JSON, no object, an unknown model are refused, naming the field', (route, dialect) => {
    expect(parsed(dialect, '{nope')).toEqual({ status: 400, code: 'invalid_json', param: null });
    expect(parsed(dialect, '[1]')).toEqual({ status: 400, code: 'invalid_request', param: null });
    expect(parsed(dialect, '')).toEqual({ status: 400, code: 'invalid_request', param: null });
    expect(parsed(dialect, { ...SMALLEST[route], model: 'no-such-model' })).toEqual({ status: 404, code: 'model_not_found', param: 'model' });
  });

  it("each API's own field paths in its refusals", () => {
    const image = (url: string) => ({ type: 'image_url', image_url: { url } });
    expect(parsed(chatCompletions, { model: 'fake-chat-1', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, image('https://10.0.0.1/a.png')] }] })).toEqual({
      status: 400,
      code: 'invalid_request',
      param: 'messages[0].content[1].image_url.url',
    });
    expect(parsed(chatCompletions, { model: 'fake-chat-1', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] })).toMatchObject({ param: 'messages[0].content[0].type' });
    expect(parsed(chatCompletions, { model: 'fake-chat-1', messages: [{ role: 'user', content: 'x' }], service_tier: 'priority' })).toMatchObject({ param: 'service_tier' });
    expect(parsed(embeddings, { model: 'fake-embed-1', input: 'x', stream: true })).toMatchObject({ param: 'stream' });
    expect(parsed(anthropicMessages, { model: 'fake-chat-1', messages: [{ role: 'user', content: 'x' }] })).toMatchObject({ param: 'max_tokens' });
    expect(parsed(anthropicMessages, { ...SMALLEST.messages, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://127.0.0.1/a.png' } }] }] })).toMatchObject({
      param: 'messages[0].content[0].source.url',
    });
    expect(parsed(openAiResponses, { ...SMALLEST.responses, store: true })).toMatchObject({ param: 'store' });
    expect(parsed(openAiResponses, { ...SMALLEST.responses, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://192.168.1.1/a.png' }] }] })).toMatchObject({
      param: 'input[0].content[0].image_url',
    });
  });

  it('credentials: a bearer token for every API; Anthropic\'s x-api-key as one, Authorization winning', () => {
    const bearer: IncomingHttpHeaders = { authorization: 'Bearer a' };
    for (const d of DIALECTS) expect(d.credentials(bearer)).toBe(bearer);
    expect(anthropicMessages.credentials({ 'x-api-key': 'k' })).toMatchObject({ authorization: 'Bearer k' });
    expect(anthropicMessages.credentials({ 'x-api-key': 'k', authorization: 'Bearer a' }).authorization).toBe('Bearer a');
    expect(chatCompletions.credentials({ 'x-api-key': 'k' }).authorization).toBeUndefined();
    expect(openAiResponses.credentials({ 'x-api-key': 'k' }).authorization).toBeUndefined();
  });

  it("the gateway's own errors: OpenAI's body (the layer's slugs in OpenAI's codes), Anthropic's with the request id", () => {
    const tooLarge = { status: 413, code: 'payload-too-large', message: 'too big' };
    for (const d of [chatCompletions, embeddings, openAiResponses]) {
      expect(JSON.parse(d.error(tooLarge, 'req-1'))).toEqual({ error: { message: 'too big', type: 'invalid_request_error', code: 'request_too_large', param: null } });
      expect(JSON.parse(d.error({ status: 400, code: 'invalid_request', message: 'm', param: 'messages[0]' }, 'req-1'))).toEqual({
        error: { message: 'm', type: 'invalid_request_error', code: 'invalid_request', param: 'messages[0]' },
      });
      expect(JSON.parse(d.error({ status: 401, code: 'invalid_token', message: 'm' }, 'req-1')).error.type).toBe('authentication_error');
    }
    expect(JSON.parse(anthropicMessages.error(tooLarge, 'req-1'))).toEqual({ type: 'error', error: { type: 'request_too_large', message: 'too big' }, request_id: 'req-1' });
    expect(JSON.parse(anthropicMessages.error({ status: 429, code: 'rate_limited', message: 'slow' }, 'req-2'))).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'slow' }, request_id: 'req-2' });
  });

  it("the provider's answer and refusal: as sent for OpenAI's APIs, translated for the others", () => {
    const request = parsed(anthropicMessages, SMALLEST.messages) as GatewayRequest;
    const chat = Buffer.from(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'yo' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1 } }));
    const refused = Buffer.from('{"error":{"message":"slow down","type":"rate_limit_error","code":null,"param":null}}');
    for (const d of [chatCompletions, embeddings]) {
      expect(d.answer(chat, request, 'r-1')).toBe(chat);
      expect(d.refusal(429, refused)).toBe(refused);
      expect(d.stream(request, 'r-1')).toBeUndefined();
    }
    expect(JSON.parse(anthropicMessages.answer(chat, request, 'r-1').toString())).toMatchObject({ id: 'msg_r1', type: 'message', model: 'fake-chat-1', content: [{ type: 'text', text: 'yo' }], stop_reason: 'end_turn' });
    expect(JSON.parse(anthropicMessages.refusal(429, refused).toString())).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
    expect(JSON.parse(openAiResponses.answer(chat, request, 'r-1').toString())).toMatchObject({ id: 'resp_r1', object: 'response', status: 'completed', output_text: 'yo' });
    expect(openAiResponses.refusal(429, refused).toString()).toBe(refused.toString());
    expect(anthropicMessages.stream(request, 'r-1')).toBeDefined();
  });

  it("a request's API: its route's, a path below one the gateway does not serve, else Chat Completions'", () => {
    expect(dialectOf(exchange('/v1/messages', '/v1/messages?beta=true'))).toBe(anthropicMessages);
    expect(dialectOf(exchange('/v1/responses', '/v1/responses'))).toBe(openAiResponses);
    expect(dialectOf(exchange('/v1*', '/v1/messages/count_tokens'))).toBe(anthropicMessages);
    expect(dialectOf(exchange('/v1*', '/v1/messagesx'))).toBe(chatCompletions);
    expect(dialectOf(exchange('/v1*', '/v1/files'))).toBe(chatCompletions);
    expect(dialectOf(exchange('/v1/models', '/v1/models'))).toBe(chatCompletions);
  });
});
