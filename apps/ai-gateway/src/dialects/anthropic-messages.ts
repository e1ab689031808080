import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../gateway.errors';
import { chatImagePart } from '../media/image-parts';
import { IMAGE_MEDIA_TYPES } from '../media/media-url';
import { MAX_TOOLS } from '../openai/openai-request';
import { type ChatTranslation, ChatStreamTranslator, type Dialect, type DialectContext, isRecord, type ToolCallDelta, translatedDialect, upstreamMessage } from './dialect';

/**
 * Anthropic's Messages API (POST /v1/messages) over the OpenAI-compatible providers. The request is
 * translated into a chat-completions body: `system` (a string or text blocks) becomes a system
 * message; text and image blocks become content parts; an assistant's `tool_use` blocks its
 * `tool_calls`; a user's `tool_result` blocks `tool` messages (before the user's other blocks, as
 * OpenAI wants them right after the calls); `tools` become function tools, `tool_choice` auto / any /
 * tool / none `auto` / `required` / the named function / `none`; `stop_sequences` `stop`,
 * `metadata.user_id` `user`; `max_tokens`, `temperature`, `top_p` and `stream` as they are. Other
 * fields are not sent (`top_k`, `thinking`, ...: no OpenAI-compatible counterpart). The answer comes
 * back as a `message` with text and `tool_use` blocks, `stop_reason` end_turn / max_tokens /
 * stop_sequence / tool_use, and usage in input_tokens / output_tokens; a stream as Anthropic's events.
 */

/** Anthropic's error `type` for a status (its API reference's table; 402 is its billing_error). */
function anthropicErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'billing_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'overloaded_error';
  if (status === 504) return 'timeout_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** Anthropic's error body. */
const anthropicError = (status: number, message: string, requestId?: string): string =>
  JSON.stringify({ type: 'error', error: { type: anthropicErrorType(status), message }, ...(requestId === undefined ? {} : { request_id: requestId }) });

/** Messages, blocks per message, and stop sequences a request may have: far above real use, bounded all the same (the body is at most 1 MiB). */
const MAX_MESSAGES = 4096;
const MAX_BLOCKS = 1024;
const MAX_STOP_SEQUENCES = 16;

const bad = (message: string, param: string | null = null): GatewayError => new GatewayError(400, 'invalid_request', message, param);

function textOf(blocks: unknown, at: string): string {
  if (typeof blocks === 'string') return blocks;
  if (!Array.isArray(blocks)) throw bad(`${at} must be a string or an array of text blocks.`, at);
  if (blocks.length > MAX_BLOCKS) throw bad(`${at} has more than ${MAX_BLOCKS} blocks.`, at);
  return blocks
    .map((b: unknown, i) => {
      if (!isRecord(b) || b.type !== 'text' || typeof b.text !== 'string') throw bad(`${at}[${i}] must be a text block.`, `${at}[${i}]`);
      return b.text;
    })
    .join('\n');
}

/**
 * An image block as OpenAI's image_url part: a base64 source as a data URL, a url source as it is;
 * both are then held to the gateway's media rule (checkMediaUrl), their errors naming the source.
 */
function imagePart(block: Record<string, unknown>, at: string): Record<string, unknown> {
  const source = block.source;
  if (isRecord(source) && source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string') {
    if (!IMAGE_MEDIA_TYPES.has(source.media_type)) throw bad(`${at}.source.media_type must be one of ${[...IMAGE_MEDIA_TYPES].join(', ')}.`, `${at}.source.media_type`);
    return chatImagePart(`data:${source.media_type};base64,${source.data}`, `${at}.source.data`);
  }
  if (isRecord(source) && source.type === 'url' && typeof source.url === 'string') return chatImagePart(source.url, `${at}.source.url`);
  throw bad(`${at}.source must be a base64 image (media_type, data) or a url.`, `${at}.source`);
}

/** A message's blocks as OpenAI messages (tool results first, then the rest). */
function translateMessage(m: unknown, i: number, out: Array<Record<string, unknown>>): void {
  const at = `messages[${i}]`;
  if (!isRecord(m)) throw bad(`${at} must be an object.`, at);
  const role = m.role;
  if (role !== 'user' && role !== 'assistant') throw bad(`${at}.role must be user or assistant.`, `${at}.role`);
  const content = m.content;
  if (typeof content === 'string') {
    out.push({ role, content });
    return;
  }
  if (!Array.isArray(content)) throw bad(`${at}.content must be a string or an array of content blocks.`, `${at}.content`);
  if (content.length > MAX_BLOCKS) throw bad(`${at}.content has more than ${MAX_BLOCKS} blocks.`, `${at}.content`);
  const parts: Array<Record<string, unknown>> = [];
  const toolCalls: Array<Record<string, unknown>> = [];
  const toolMessages: Array<Record<string, unknown>> = [];
  for (let j = 0; j < content.length; j++) {
    const block: unknown = content[j];
    const bat = `${at}.content[${j}]`;
    if (!isRecord(block) || typeof block.type !== 'string') throw bad(`${bat} must be a content block with a type.`, bat);
    switch (block.type) {
      case 'text':
        if (typeof block.text !== 'string') throw bad(`${bat}.text must be a string.`, `${bat}.text`);
        parts.push({ type: 'text', text: block.text });
        break;
      case 'image':
        if (role !== 'user') throw bad(`${bat}: image blocks are for user messages.`, bat);
        parts.push(imagePart(block, bat));
        break;
      case 'tool_use':
        if (role !== 'assistant') throw bad(`${bat}: tool_use blocks are for assistant messages.`, bat);
        if (typeof block.id !== 'string' || typeof block.name !== 'string') throw bad(`${bat} needs an id and a name.`, bat);
        toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
        break;
      case 'tool_result': {
        if (role !== 'user') throw bad(`${bat}: tool_result blocks are for user messages.`, bat);
        if (typeof block.tool_use_id !== 'string') throw bad(`${bat}.tool_use_id must be a string.`, `${bat}.tool_use_id`);
        let text = '';
        const result = block.content;
        if (typeof result === 'string') text = result;
        else if (Array.isArray(result)) {
          if (result.length > MAX_BLOCKS) throw bad(`${bat}.content has more than ${MAX_BLOCKS} blocks.`, `${bat}.content`);
          for (let k = 0; k < result.length; k++) {
            const r: unknown = result[k];
            if (isRecord(r) && r.type === 'text' && typeof r.text === 'string') text += (text === '' ? '' : '\n') + r.text;
            // A tool message has no image parts: the result's images go with the user's own parts.
            else if (isRecord(r) && r.type === 'image') parts.push(imagePart(r, `${bat}.content[${k}]`));
            else throw bad(`${bat}.content[${k}] must be a text or image block.`, `${bat}.content[${k}]`);
          }
        } else if (result !== undefined && result !== null) throw bad(`${bat}.content must be a string or an array of blocks.`, `${bat}.content`);
        toolMessages.push({ role: 'tool', tool_call_id: block.tool_use_id, content: block.is_error === true ? `Error: ${text}` : text });
        break;
      }
      case 'thinking':
      case 'redacted_thinking':
        // A model's earlier reasoning: OpenAI-compatible providers take none back.
        break;
      default:
        throw bad(`${bat}: content blocks of type ${String(block.type).slice(0, 50)} are not supported by this gateway (text, image, tool_use, tool_result are).`, `${bat}.type`);
    }
  }
  out.push(...toolMessages);
  if (role === 'assistant') {
    const text = parts.map((p) => p.text as string).join('');
    if (text !== '' || toolCalls.length > 0) out.push({ role, content: text === '' ? null : text, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) });
  } else if (parts.length > 0 || toolMessages.length === 0) {
    out.push({ role, content: parts.every((p) => p.type === 'text') ? parts.map((p) => p.text as string).join('\n') : parts });
  }
}

function translateTools(tools: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(tools) || tools.length > MAX_TOOLS) throw bad(`tools must be an array of at most ${MAX_TOOLS} tools.`, 'tools');
  return tools.map((t: unknown, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(t) || typeof t.name !== 'string' || t.name === '') throw bad(`${at} must have a name.`, at);
    if (t.type !== undefined && t.type !== null && t.type !== 'custom') {
      throw bad(`${at}: server tools (${String(t.type).slice(0, 50)}) are not supported by this gateway; define a client tool (name, description, input_schema).`, `${at}.type`);
    }
    if (!isRecord(t.input_schema)) throw bad(`${at}.input_schema must be a JSON schema object.`, `${at}.input_schema`);
    return { type: 'function', function: { name: t.name, ...(typeof t.description === 'string' ? { description: t.description } : {}), parameters: t.input_schema } };
  });
}

function translateToolChoice(choice: unknown, chat: Record<string, unknown>): void {
  if (choice === undefined || choice === null) return;
  if (!isRecord(choice)) throw bad('tool_choice must be an object with a type.', 'tool_choice');
  // Without tools there is nothing to choose (OpenAI refuses a tool_choice without tools).
  if (chat.tools === undefined) {
    if (choice.type === 'tool' || choice.type === 'any') throw bad(`tool_choice ${String(choice.type)} needs tools.`, 'tool_choice');
    return;
  }
  if (choice.type === 'auto') chat.tool_choice = 'auto';
  else if (choice.type === 'any') chat.tool_choice = 'required';
  else if (choice.type === 'none') chat.tool_choice = 'none';
  else if (choice.type === 'tool' && typeof choice.name === 'string') chat.tool_choice = { type: 'function', function: { name: choice.name } };
  else throw bad('tool_choice.type must be auto, any, none, or tool with a name.', 'tool_choice');
  if (choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
}

function toChat(body: Record<string, unknown>): Record<string, unknown> {
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isSafeInteger(maxTokens) || maxTokens < 1) throw bad('max_tokens is required: a positive integer.', 'max_tokens');
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw bad('messages must be a non-empty array.', 'messages');
  if (messages.length > MAX_MESSAGES) throw bad(`messages must have at most ${MAX_MESSAGES} messages.`, 'messages');
  const out: Array<Record<string, unknown>> = [];
  if (body.system !== undefined && body.system !== null) {
    const system = textOf(body.system, 'system');
    if (system !== '') out.push({ role: 'system', content: system });
  }
  for (let i = 0; i < messages.length; i++) translateMessage(messages[i], i, out);
  const chat: Record<string, unknown> = { model: body.model, messages: out, max_tokens: maxTokens };
  if (body.tools !== undefined && body.tools !== null) chat.tools = translateTools(body.tools);
  translateToolChoice(body.tool_choice, chat);
  const stop = body.stop_sequences;
  if (stop !== undefined && stop !== null) {
    if (!Array.isArray(stop) || stop.length > MAX_STOP_SEQUENCES || !stop.every((s) => typeof s === 'string' && s !== '')) {
      throw bad(`stop_sequences must be an array of at most ${MAX_STOP_SEQUENCES} non-empty strings.`, 'stop_sequences');
    }
    if (stop.length > 0) chat.stop = stop;
  }
  for (const field of ['temperature', 'top_p'] as const) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`${field} must be a number.`, field);
    chat[field] = v;
  }
  const metadata = body.metadata;
  if (isRecord(metadata) && typeof metadata.user_id === 'string') chat.user = metadata.user_id.slice(0, 256);
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw bad('stream must be a boolean.', 'stream');
  if (stream === true) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat;
}

type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

/**
 * OpenAI's finish_reason as Anthropic's stop_reason. `stop` is `stop_sequence` when the provider
 * names the stop string it met (vLLM's `stop_reason`, when it is one of the request's stop sequences).
 */
function stopReason(finish: unknown, matched: unknown, body: Record<string, unknown>): { reason: StopReason; sequence: string | null } {
  if (finish === 'length') return { reason: 'max_tokens', sequence: null };
  if (finish === 'tool_calls' || finish === 'function_call') return { reason: 'tool_use', sequence: null };
  if (finish === 'content_filter') return { reason: 'refusal', sequence: null };
  const stops = body.stop_sequences;
  if (typeof matched === 'string' && Array.isArray(stops) && stops.includes(matched)) return { reason: 'stop_sequence', sequence: matched };
  return { reason: 'end_turn', sequence: null };
}

/** OpenAI's usage as Anthropic's: cached prompt tokens apart (cache_read_input_tokens), as Anthropic counts them. */
function usageOf(usage: unknown): { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number } {
  if (!isRecord(usage)) return { input_tokens: 0, output_tokens: 0 };
  const prompt = typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0;
  const output = typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0;
  const details = usage.prompt_tokens_details;
  const cached = isRecord(details) && typeof details.cached_tokens === 'number' ? Math.min(details.cached_tokens, prompt) : 0;
  return { input_tokens: prompt - cached, output_tokens: output, ...(cached > 0 ? { cache_read_input_tokens: cached } : {}) };
}

/** A tool call's arguments as the tool_use block's input: an object (a model's malformed JSON is kept, as a string, under `_raw`). */
function inputOf(args: unknown): Record<string, unknown> {
  if (typeof args !== 'string' || args === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return isRecord(parsed) ? parsed : { _raw: args };
  } catch {
    return { _raw: args };
  }
}

const messageId = (requestId: string): string => `msg_${requestId.replace(/-/g, '')}`;

function answer(chat: unknown, context: DialectContext): string {
  const choice = isRecord(chat) && Array.isArray(chat.choices) && isRecord(chat.choices[0]) ? chat.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const content: Array<Record<string, unknown>> = [];
  if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isRecord(call) || !isRecord(call.function)) continue;
      content.push({ type: 'tool_use', id: typeof call.id === 'string' ? call.id : '', name: call.function.name, input: inputOf(call.function.arguments) });
    }
  }
  const { reason, sequence } = stopReason(choice.finish_reason, choice.stop_reason, context.body);
  return JSON.stringify({
    id: messageId(context.requestId),
    type: 'message',
    role: 'assistant',
    model: context.model,
    content,
    stop_reason: reason,
    stop_sequence: sequence,
    usage: usageOf(isRecord(chat) ? chat.usage : undefined),
  });
}

const event = (type: string, data: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/**
 * The chat-completion chunks as Anthropic's events: message_start (and a ping) before the first,
 * then per block content_block_start, its deltas (text_delta, input_json_delta) and
 * content_block_stop; at the end message_delta (stop_reason, usage) and message_stop. An upstream
 * error event becomes Anthropic's `error` event, and nothing follows it. Only the first choice is
 * read (Anthropic has no `n`).
 */
class AnthropicStream extends ChatStreamTranslator {
  /** The open block's index and kind (-1: none), and the upstream tool call index it is for. */
  private block = -1;
  private kind: 'text' | 'tool_use' | undefined;
  private toolIndex: number | undefined;

  constructor(private readonly context: DialectContext) {
    super();
  }

  protected opening(): string {
    const message = { id: messageId(this.context.requestId), type: 'message', role: 'assistant', model: this.context.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    return event('message_start', { message }) + event('ping', {});
  }

  protected error(e: Record<string, unknown>): string {
    const message = typeof e.message === 'string' ? e.message : 'The provider failed midway.';
    // The gateway's own stream errors (provider layer): a shutdown cut is overloaded_error (retry elsewhere), a time-out timeout_error.
    const type = e.code === 'service_unavailable' ? 'overloaded_error' : e.code === 'provider_timeout' ? 'timeout_error' : 'api_error';
    return event('error', { error: { type, message } });
  }

  protected text(content: string): string {
    const out = this.kind !== 'text' ? this.open('text', { type: 'text', text: '' }) : '';
    return out + event('content_block_delta', { index: this.block, delta: { type: 'text_delta', text: content } });
  }

  protected toolCall(call: ToolCallDelta): string {
    let out = '';
    if (this.kind !== 'tool_use' || this.toolIndex !== call.index) {
      out += this.open('tool_use', { type: 'tool_use', id: call.id ?? '', name: call.name, input: {} });
      this.toolIndex = call.index;
    }
    if (call.arguments !== '') out += event('content_block_delta', { index: this.block, delta: { type: 'input_json_delta', partial_json: call.arguments } });
    return out;
  }

  private open(kind: 'text' | 'tool_use', block: Record<string, unknown>): string {
    const out = this.stopBlock();
    this.block++;
    this.kind = kind;
    return out + event('content_block_start', { index: this.block, content_block: block });
  }

  private stopBlock(): string {
    if (this.kind === undefined) return '';
    this.kind = undefined;
    this.toolIndex = undefined;
    return event('content_block_stop', { index: this.block });
  }

  protected closing(): string {
    const { reason, sequence } = stopReason(this.finish, this.finishChoice?.stop_reason, this.context.body);
    // The input's count is known only now (OpenAI reports usage last): message_delta carries it, as Anthropic's does its cumulative counts.
    return this.stopBlock() + event('message_delta', { delta: { stop_reason: reason, stop_sequence: sequence }, usage: usageOf(this.usage) }) + event('message_stop', {});
  }
}

/** The request and the answer translated; the gateway's use of them is anthropicMessages. */
export const messagesTranslation: ChatTranslation = {
  toChat,
  answer,
  refusal: (status, body) => anthropicError(status, upstreamMessage(body, status)),
  stream: (context) => new AnthropicStream(context),
};

/**
 * Anthropic's SDKs send the key as `x-api-key` (`apiKey`) or `Authorization: Bearer` (`authToken`):
 * either carries the gateway's access token; Authorization wins when both are sent.
 */
function credentials(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const key = headers['x-api-key'];
  if (headers.authorization !== undefined || typeof key !== 'string' || key === '') return headers;
  return { ...headers, authorization: `Bearer ${key}` };
}

export const anthropicMessages: Dialect<'messages'> = translatedDialect(
  {
    route: 'messages',
    path: '/v1/messages',
    credentials,
    // Anthropic's SDKs read Anthropic's error body, with the request id it names.
    error: (error, requestId) => anthropicError(error.status, error.message, requestId),
  },
  messagesTranslation,
);
