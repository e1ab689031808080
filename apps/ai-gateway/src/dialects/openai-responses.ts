import { GatewayError } from '../gateway.errors';
import { chatImagePart } from '../media/image-parts';
import { MAX_TOOLS } from '../openai/openai-request';
import { bearerCredentials, type ChatTranslation, ChatStreamTranslator, type Dialect, type DialectContext, isRecord, type ToolCallDelta, translatedDialect } from './dialect';
import { openAiError } from './openai-errors';

/**
 * OpenAI's Responses API (POST /v1/responses), stateless, over the providers' chat completions. The
 * request is translated into a chat-completions body: `instructions` becomes a system message; `input`
 * (a string, or items: messages with input_text / input_image / output_text parts, `function_call`
 * and `function_call_output` items) becomes messages, tool calls and tool results; function `tools`,
 * `tool_choice`, `max_output_tokens` (max_completion_tokens), `temperature`, `top_p`,
 * `parallel_tool_calls`, `text.format` (response_format), `user` / `safety_identifier` as they are.
 * What needs state kept by the server is refused (400): `previous_response_id`, `store: true`,
 * `background: true`, `conversation`, `prompt`, item references; so are built-in tools (web search,
 * file search, ...). The answer is a `response` object with `message` and `function_call` output
 * items, `output_text` and usage; a stream as the Responses events.
 */

const MAX_ITEMS = 4096;
const MAX_PARTS = 1024;

const bad = (message: string, param: string | null = null): GatewayError => new GatewayError(400, 'invalid_request', message, param);

/** A message item's content as a chat message's: a string, or its parts (input_text, output_text, input_image). */
function content(value: unknown, at: string): string | Array<Record<string, unknown>> {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) throw bad(`${at} must be a string or an array of content parts.`, at);
  if (value.length > MAX_PARTS) throw bad(`${at} has more than ${MAX_PARTS} parts.`, at);
  const parts = value.map((p: unknown, i) => {
    const pat = `${at}[${i}]`;
    if (!isRecord(p)) throw bad(`${pat} must be a content part.`, pat);
    if ((p.type === 'input_text' || p.type === 'output_text') && typeof p.text === 'string') return { type: 'text', text: p.text };
    if (p.type === 'refusal' && typeof p.refusal === 'string') return { type: 'text', text: p.refusal };
    if (p.type === 'input_image') {
      if (typeof p.image_url !== 'string') throw bad(`${pat}: input_image needs an image_url (file ids need stored files, which this gateway does not keep).`, pat);
      return chatImagePart(p.image_url, `${pat}.image_url`, typeof p.detail === 'string' ? p.detail : undefined);
    }
    throw bad(`${pat}: content parts of type ${String(p.type).slice(0, 50)} are not supported by this gateway (input_text, input_image, output_text are).`, pat);
  });
  return parts.every((p) => p.type === 'text') ? parts.map((p) => p.text as string).join('') : parts;
}

function translateInput(input: unknown, out: Array<Record<string, unknown>>): void {
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return;
  }
  if (!Array.isArray(input) || input.length === 0) throw bad('input must be a string or a non-empty array of items.', 'input');
  if (input.length > MAX_ITEMS) throw bad(`input must have at most ${MAX_ITEMS} items.`, 'input');
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i];
    const at = `input[${i}]`;
    if (!isRecord(item)) throw bad(`${at} must be an item object.`, at);
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = item.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer') throw bad(`${at}.role must be user, assistant, system or developer.`, `${at}.role`);
      out.push({ role, content: content(item.content, `${at}.content`) });
    } else if (type === 'function_call') {
      if (typeof item.call_id !== 'string' || typeof item.name !== 'string' || typeof item.arguments !== 'string') throw bad(`${at} needs call_id, name and arguments.`, at);
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      // Calls in a row are one assistant turn, as chat completions has them.
      const last = out[out.length - 1];
      if (last !== undefined && last.role === 'assistant' && Array.isArray(last.tool_calls)) (last.tool_calls as unknown[]).push(call);
      else out.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output') {
      if (typeof item.call_id !== 'string') throw bad(`${at}.call_id must be a string.`, `${at}.call_id`);
      const output = typeof item.output === 'string' ? item.output : content(item.output, `${at}.output`);
      out.push({ role: 'tool', tool_call_id: item.call_id, content: typeof output === 'string' ? output : output.map((p) => (typeof p.text === 'string' ? p.text : '')).join('') });
    } else if (type === 'reasoning') {
      // A reasoning model's earlier reasoning: chat completions takes none back.
    } else if (type === 'item_reference') {
      throw bad(`${at}: item references need stored responses, which this gateway does not keep; send the items themselves.`, at);
    } else {
      throw bad(`${at}: items of type ${String(type).slice(0, 50)} are not supported by this gateway (message, function_call, function_call_output are).`, `${at}.type`);
    }
  }
}

function translateTools(tools: unknown): Array<Record<string, unknown>> {
  if (!Array.isArray(tools) || tools.length > MAX_TOOLS) throw bad(`tools must be an array of at most ${MAX_TOOLS} tools.`, 'tools');
  return tools.map((t: unknown, i) => {
    const at = `tools[${i}]`;
    if (!isRecord(t)) throw bad(`${at} must be a tool object.`, at);
    if (t.type !== 'function') throw bad(`${at}: built-in tools (${String(t.type).slice(0, 50)}) are not supported by this gateway; define function tools.`, `${at}.type`);
    if (typeof t.name !== 'string' || t.name === '') throw bad(`${at}.name must be a string.`, `${at}.name`);
    const fn: Record<string, unknown> = { name: t.name };
    if (typeof t.description === 'string') fn.description = t.description;
    if (isRecord(t.parameters)) fn.parameters = t.parameters;
    if (typeof t.strict === 'boolean') fn.strict = t.strict;
    return { type: 'function', function: fn };
  });
}

function translateToolChoice(choice: unknown): unknown {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string') return { type: 'function', function: { name: choice.name } };
  throw bad('tool_choice must be auto, none, required, or {type: "function", name}.', 'tool_choice');
}

function refuseState(body: Record<string, unknown>): void {
  const stateful = 'this gateway is stateless: it keeps no responses; send the whole conversation as input items.';
  if (body.previous_response_id !== undefined && body.previous_response_id !== null) throw bad(`previous_response_id is not supported: ${stateful}`, 'previous_response_id');
  if (body.store === true) throw bad(`store: true is not supported: ${stateful} Send store: false or leave it out.`, 'store');
  if (body.background === true) throw bad(`background mode is not supported: ${stateful}`, 'background');
  if (body.conversation !== undefined && body.conversation !== null) throw bad(`conversation is not supported: ${stateful}`, 'conversation');
  if (body.prompt !== undefined && body.prompt !== null) throw bad('prompt templates are not supported: this gateway keeps no prompts; send instructions and input.', 'prompt');
}

function toChat(body: Record<string, unknown>): Record<string, unknown> {
  refuseState(body);
  const messages: Array<Record<string, unknown>> = [];
  const instructions = body.instructions;
  if (instructions !== undefined && instructions !== null) {
    if (typeof instructions !== 'string') throw bad('instructions must be a string.', 'instructions');
    if (instructions !== '') messages.push({ role: 'system', content: instructions });
  }
  translateInput(body.input, messages);
  const chat: Record<string, unknown> = { model: body.model, messages };
  const max = body.max_output_tokens;
  if (max !== undefined && max !== null) {
    if (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1) throw bad('max_output_tokens must be a positive integer.', 'max_output_tokens');
    chat.max_completion_tokens = max;
  }
  if (body.tools !== undefined && body.tools !== null) chat.tools = translateTools(body.tools);
  if (body.tool_choice !== undefined && body.tool_choice !== null) {
    const choice = translateToolChoice(body.tool_choice);
    // Without tools there is nothing to choose (chat completions refuses a tool_choice without tools).
    if (chat.tools !== undefined) chat.tool_choice = choice;
    else if (choice !== 'auto' && choice !== 'none') throw bad('tool_choice needs tools.', 'tool_choice');
  }
  for (const field of ['temperature', 'top_p'] as const) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`${field} must be a number.`, field);
    chat[field] = v;
  }
  if (typeof body.parallel_tool_calls === 'boolean' && chat.tools !== undefined) chat.parallel_tool_calls = body.parallel_tool_calls;
  const user = typeof body.safety_identifier === 'string' ? body.safety_identifier : body.user;
  if (typeof user === 'string') chat.user = user.slice(0, 256);
  const text = body.text;
  if (isRecord(text) && isRecord(text.format)) {
    const format = text.format;
    if (format.type === 'json_schema') chat.response_format = { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, ...(typeof format.strict === 'boolean' ? { strict: format.strict } : {}) } };
    else if (format.type === 'json_object') chat.response_format = { type: 'json_object' };
  }
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw bad('stream must be a boolean.', 'stream');
  if (stream === true) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat;
}

const compact = (requestId: string): string => requestId.replace(/-/g, '');

/** OpenAI's chat usage as the Responses API's. */
function usageOf(usage: unknown): Record<string, unknown> {
  const u = isRecord(usage) ? usage : {};
  const input = typeof u.prompt_tokens === 'number' ? u.prompt_tokens : 0;
  const output = typeof u.completion_tokens === 'number' ? u.completion_tokens : 0;
  const cached = isRecord(u.prompt_tokens_details) && typeof u.prompt_tokens_details.cached_tokens === 'number' ? u.prompt_tokens_details.cached_tokens : 0;
  const reasoning = isRecord(u.completion_tokens_details) && typeof u.completion_tokens_details.reasoning_tokens === 'number' ? u.completion_tokens_details.reasoning_tokens : 0;
  return { input_tokens: input, input_tokens_details: { cached_tokens: cached }, output_tokens: output, output_tokens_details: { reasoning_tokens: reasoning }, total_tokens: input + output };
}

/** The status a finish_reason leaves a response in. */
function statusOf(finish: unknown): { status: 'completed' | 'incomplete'; incomplete_details: { reason: string } | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

const messageItem = (id: string, text: string, status: string): Record<string, unknown> => ({
  id,
  type: 'message',
  role: 'assistant',
  status,
  content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
});

const callItem = (id: string, callId: string, name: string, args: string, status: string): Record<string, unknown> => ({ id, type: 'function_call', status, call_id: callId, name, arguments: args });

/** The response object, its request's settings echoed as OpenAI does. */
function responseObject(context: DialectContext, fields: Record<string, unknown>): Record<string, unknown> {
  const b = context.body;
  const output = Array.isArray(fields.output) ? (fields.output as Array<Record<string, unknown>>) : [];
  let outputText = '';
  for (const item of output) if (item.type === 'message') for (const c of item.content as Array<{ text: string }>) outputText += c.text;
  return {
    id: `resp_${compact(context.requestId)}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: typeof b.instructions === 'string' ? b.instructions : null,
    max_output_tokens: typeof b.max_output_tokens === 'number' ? b.max_output_tokens : null,
    model: context.model,
    output,
    output_text: outputText,
    parallel_tool_calls: typeof b.parallel_tool_calls === 'boolean' ? b.parallel_tool_calls : true,
    previous_response_id: null,
    reasoning: null,
    store: false,
    temperature: typeof b.temperature === 'number' ? b.temperature : null,
    text: isRecord(b.text) ? b.text : { format: { type: 'text' } },
    tool_choice: b.tool_choice ?? 'auto',
    tools: Array.isArray(b.tools) ? b.tools : [],
    top_p: typeof b.top_p === 'number' ? b.top_p : null,
    truncation: 'disabled',
    usage: null,
    metadata: isRecord(b.metadata) ? b.metadata : {},
    ...fields,
  };
}

function answer(chat: unknown, context: DialectContext): string {
  const choice = isRecord(chat) && Array.isArray(chat.choices) && isRecord(chat.choices[0]) ? chat.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const rid = compact(context.requestId);
  const output: Array<Record<string, unknown>> = [];
  if (typeof message.content === 'string' && message.content !== '') output.push(messageItem(`msg_${rid}`, message.content, 'completed'));
  if (Array.isArray(message.tool_calls)) {
    message.tool_calls.forEach((call: unknown, i) => {
      if (!isRecord(call) || !isRecord(call.function)) return;
      const fn = call.function;
      output.push(callItem(`fc_${rid}_${i}`, typeof call.id === 'string' ? call.id : `call_${rid}_${i}`, String(fn.name ?? ''), typeof fn.arguments === 'string' ? fn.arguments : '', 'completed'));
    });
  }
  return JSON.stringify(responseObject(context, { ...statusOf(choice.finish_reason), output, usage: usageOf(isRecord(chat) ? chat.usage : undefined) }));
}

interface OpenItem {
  kind: 'message' | 'function_call';
  index: number;
  id: string;
  text: string;
  callId: string;
  name: string;
  toolIndex: number;
}

/**
 * The chat-completion chunks as the Responses events: response.created and response.in_progress
 * first; per output item output_item.added, then for a message content_part.added,
 * output_text.delta ..., output_text.done, content_part.done, for a function call
 * function_call_arguments.delta ..., function_call_arguments.done, then output_item.done; at the end
 * response.completed (or incomplete) with the whole output and usage. An upstream error event becomes
 * an `error` event, and nothing follows it. Only the first choice is read.
 */
class ResponsesStream extends ChatStreamTranslator {
  private sequence = 0;
  private item: OpenItem | undefined;
  private readonly done: Array<Record<string, unknown>> = [];
  private readonly rid: string;

  constructor(private readonly context: DialectContext) {
    super();
    this.rid = compact(context.requestId);
  }

  private event(type: string, data: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: this.sequence++ })}\n\n`;
  }

  protected opening(): string {
    const response = responseObject(this.context, { output: [] });
    return this.event('response.created', { response }) + this.event('response.in_progress', { response });
  }

  protected error(e: Record<string, unknown>): string {
    return this.event('error', { code: typeof e.code === 'string' ? e.code : 'provider_error', message: typeof e.message === 'string' ? e.message : 'The provider failed midway.', param: null });
  }

  protected text(content: string): string {
    const out = this.item?.kind !== 'message' ? this.open('message', '', '', 0) : '';
    const item = this.item!;
    item.text += content;
    return out + this.event('response.output_text.delta', { item_id: item.id, output_index: item.index, content_index: 0, delta: content, logprobs: [] });
  }

  protected toolCall(call: ToolCallDelta): string {
    let out = '';
    if (this.item?.kind !== 'function_call' || this.item.toolIndex !== call.index) out += this.open('function_call', call.id ?? `call_${this.rid}_${call.index}`, call.name, call.index);
    const item = this.item!;
    if (call.arguments !== '') {
      item.text += call.arguments;
      out += this.event('response.function_call_arguments.delta', { item_id: item.id, output_index: item.index, delta: call.arguments });
    }
    return out;
  }

  private open(kind: 'message' | 'function_call', callId: string, name: string, toolIndex: number): string {
    let out = this.closeItem();
    const index = this.done.length;
    const id = kind === 'message' ? `msg_${this.rid}_${index}` : `fc_${this.rid}_${index}`;
    this.item = { kind, index, id, text: '', callId, name, toolIndex };
    if (kind === 'message') {
      out += this.event('response.output_item.added', { output_index: index, item: { id, type: 'message', role: 'assistant', status: 'in_progress', content: [] } });
      out += this.event('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    } else {
      out += this.event('response.output_item.added', { output_index: index, item: callItem(id, callId, name, '', 'in_progress') });
    }
    return out;
  }

  private closeItem(): string {
    const item = this.item;
    if (item === undefined) return '';
    this.item = undefined;
    let out = '';
    let done: Record<string, unknown>;
    if (item.kind === 'message') {
      out += this.event('response.output_text.done', { item_id: item.id, output_index: item.index, content_index: 0, text: item.text, logprobs: [] });
      out += this.event('response.content_part.done', { item_id: item.id, output_index: item.index, content_index: 0, part: { type: 'output_text', text: item.text, annotations: [], logprobs: [] } });
      done = messageItem(item.id, item.text, 'completed');
    } else {
      out += this.event('response.function_call_arguments.done', { item_id: item.id, output_index: item.index, name: item.name, arguments: item.text });
      done = callItem(item.id, item.callId, item.name, item.text, 'completed');
    }
    this.done.push(done);
    return out + this.event('response.output_item.done', { output_index: item.index, item: done });
  }

  protected closing(): string {
    const out = this.closeItem();
    const state = statusOf(this.finish);
    const response = responseObject(this.context, { ...state, output: this.done, usage: usageOf(this.usage) });
    return out + this.event(state.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }
}

/** The request and the answer translated; the gateway's use of them is openAiResponses. */
export const responsesTranslation: ChatTranslation = {
  toChat,
  answer,
  // The provider's refusal is in OpenAI's error body already.
  refusal: (_status, body) => body.toString('utf8'),
  stream: (context) => new ResponsesStream(context),
};

export const openAiResponses: Dialect<'responses'> = translatedDialect(
  { route: 'responses', path: '/v1/responses', credentials: bearerCredentials, error: (error) => openAiError(error) },
  responsesTranslation,
);
