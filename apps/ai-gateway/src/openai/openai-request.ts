import { exceedsJsonDepth, MAX_JSON_DEPTH } from '@flagship/service-kit';
import { GatewayError } from '../gateway.errors';
import type { ModelEntry } from '../models/model-catalogue';
import type { Endpoint } from '../providers/provider.types';

/** A request body as the gateway needs it; `body` is the client's object, passed on untouched. */
export interface GatewayRequest {
  endpoint: Endpoint;
  body: Record<string, unknown>;
  model: ModelEntry;
  stream: boolean;
  /** Upper estimates, for the reservation and the token rate limit (never billed: the provider's usage is). */
  inputTokens: number;
  outputTokens: number;
}

const ROLES: ReadonlySet<string> = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

const bad = (message: string, param: string | null): GatewayError => new GatewayError(400, 'invalid_request', message, param);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates only what the gateway itself reads (`model`, `messages`, `input`, `stream`,
 * `stream_options`, and `max_tokens`/`max_completion_tokens` for the estimate when they are numbers);
 * every other field (`tools`, `response_format`, `temperature`, `seed`, ...) goes to the provider as sent.
 */
export function parseGatewayRequest(
  endpoint: Endpoint,
  text: string,
  models: ReadonlyMap<string, ModelEntry>,
  defaultMaxOutputTokens: number,
): GatewayRequest {
  if (text === '') throw bad('The request body is empty; send a JSON object.', null);
  // Deeper JSON than any OpenAI request needs is refused before it is parsed (CONTRACT.md section 4).
  if (exceedsJsonDepth(text)) throw bad(`The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`, null);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new GatewayError(400, 'invalid_json', 'The request body is not valid JSON.', null);
  }
  if (!isRecord(body)) throw bad('The request body must be a JSON object.', null);
  const modelId = body['model'];
  if (typeof modelId !== 'string' || modelId === '') throw bad('model is required: a model id from /v1/models.', 'model');
  const model = models.get(modelId);
  if (model === undefined) throw new GatewayError(404, 'model_not_found', `The model ${modelId.slice(0, 200)} does not exist; see /v1/models.`, 'model');

  const stream = body['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw bad('stream must be a boolean.', 'stream');
  const streamOptions = body['stream_options'];
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isRecord(streamOptions)) throw bad('stream_options must be an object.', 'stream_options');
    const includeUsage = streamOptions['include_usage'];
    if (includeUsage !== undefined && typeof includeUsage !== 'boolean') throw bad('stream_options.include_usage must be a boolean.', 'stream_options.include_usage');
  }

  if (endpoint === 'embeddings') {
    if (stream === true) throw bad('embeddings cannot be streamed.', 'stream');
    const chars = inputChars(body['input']);
    return { endpoint, body, model, stream: false, inputTokens: upperTokens(chars, 1), outputTokens: 0 };
  }
  const { chars, count } = messageChars(body['messages']);
  const max = body['max_completion_tokens'] ?? body['max_tokens'];
  const outputTokens = typeof max === 'number' && Number.isSafeInteger(max) && max > 0 ? max : defaultMaxOutputTokens;
  return { endpoint, body, model, stream: stream === true, inputTokens: upperTokens(chars, count), outputTokens };
}

/** Generous on purpose (about two characters per token, four per message): a reservation that is too small could let a balance run below minus one request's cost. */
function upperTokens(chars: number, items: number): number {
  return Math.ceil(chars / 2) + 4 * items;
}

function messageChars(messages: unknown): { chars: number; count: number } {
  if (!Array.isArray(messages) || messages.length === 0) throw bad('messages must be a non-empty array.', 'messages');
  let chars = 0;
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    const at = `messages[${i}]`;
    if (!isRecord(m)) throw bad(`${at} must be an object.`, at);
    const role = m['role'];
    if (typeof role !== 'string' || !ROLES.has(role)) throw bad(`${at}.role must be one of ${[...ROLES].join(', ')}.`, `${at}.role`);
    const content = m['content'];
    if (typeof content === 'string') chars += content.length;
    else if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        const part: unknown = content[j];
        if (!isRecord(part) || typeof part['type'] !== 'string') throw bad(`${at}.content[${j}] must be a content part with a type.`, `${at}.content`);
        if (typeof part['text'] === 'string') chars += part['text'].length;
        else chars += 1000; // an image or audio part: its tokens are the provider's to count
      }
    } else if (content === null || content === undefined) {
      // An assistant turn that only called tools has no content.
      if (role !== 'assistant') throw bad(`${at}.content is required for role ${role}.`, `${at}.content`);
    } else throw bad(`${at}.content must be a string or an array of content parts.`, `${at}.content`);
    chars += JSON.stringify(m['tool_calls'] ?? '').length;
  }
  return { chars, count: messages.length };
}

function inputChars(input: unknown): number {
  if (typeof input === 'string') {
    if (input === '') throw bad('input must not be empty.', 'input');
    return input.length;
  }
  if (!Array.isArray(input) || input.length === 0) throw bad('input must be a string or a non-empty array of strings (or of token arrays).', 'input');
  let chars = 0;
  for (const item of input) {
    if (typeof item === 'string') chars += item.length;
    else if (typeof item === 'number' && Number.isInteger(item)) chars += 2; // a token id
    else if (Array.isArray(item) && item.length > 0 && item.every((t) => typeof t === 'number' && Number.isInteger(t))) chars += 2 * item.length;
    else throw bad('input must be a string or a non-empty array of strings (or of token arrays).', 'input');
  }
  return chars;
}
