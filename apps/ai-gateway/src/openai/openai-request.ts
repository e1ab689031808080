import { exceedsJsonDepth, MAX_JSON_DEPTH } from '@flagship/service-kit';
import { GatewayError } from '../gateway.errors';
import type { ModelEntry } from '../models/model-catalogue';
import type { Endpoint } from '../providers/provider.types';
import type { Dialect, GatewayRoute } from '../dialects/dialect';

/** A request body as the gateway needs it; `body` is the client's object, passed on untouched (or the chat body a dialect made of it). */
export interface GatewayRequest {
  /** The provider endpoint called. */
  endpoint: Endpoint;
  /** The gateway route asked (the ledger's and the metrics' endpoint): the provider endpoint, or `messages` / `responses`. */
  route: GatewayRoute;
  /** The API the client speaks when it is not OpenAI's Chat Completions or Embeddings: its answers are translated back. */
  dialect?: Dialect;
  /** With a dialect: the client's own body, before its translation. */
  original?: Record<string, unknown>;
  body: Record<string, unknown>;
  model: ModelEntry;
  stream: boolean;
  /** Upper bounds, for the reservation and the token rate limit (never billed: the provider's usage is); see estimateInput. */
  inputTokens: number;
  /** The output reserved: max tokens per choice x `n`; the upstream is asked for no more (capOutput). */
  outputTokens: number;
}

/** Image parts count this many input tokens each by default (GATEWAY_IMAGE_TOKENS): OpenAI's dearest, gpt-4o-mini at high detail, is 48,169. */
export const DEFAULT_IMAGE_TOKENS = 50_000;

/** OpenAI's own upper bound for `n`. */
const MAX_CHOICES = 128;
/** OpenAI's own upper bound for `tools`. */
export const MAX_TOOLS = 128;

const ROLES: ReadonlySet<string> = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

const bad = (message: string, param: string | null): GatewayError => new GatewayError(400, 'invalid_request', message, param);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates only what the gateway itself reads (`model`, `messages`, `input`, `stream`,
 * `stream_options`, `n`, `max_tokens`/`max_completion_tokens`); every other field (`tools`,
 * `response_format`, `temperature`, `seed`, ...) goes to the provider as sent, but for the output
 * cap (capOutput).
 */
export function parseGatewayRequest(
  endpoint: Endpoint,
  text: string,
  models: ReadonlyMap<string, ModelEntry>,
  defaultMaxOutputTokens: number,
  imageTokens = DEFAULT_IMAGE_TOKENS,
): GatewayRequest {
  return requestOf(endpoint, parseJsonObject(text), Buffer.byteLength(text, 'utf8'), models, defaultMaxOutputTokens, imageTokens);
}

/** The body as a JSON object: refused when empty, deeper than MAX_JSON_DEPTH, not JSON, or not an object. */
export function parseJsonObject(text: string): Record<string, unknown> {
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
  return body;
}

/**
 * The request of a parsed OpenAI body whose JSON text is `bytes` long. A dialect's request comes here
 * as the chat body made of it (its bytes those of that body's JSON), so its estimate and admission
 * are the same as a Chat Completions request's.
 */
export function requestOf(
  endpoint: Endpoint,
  body: Record<string, unknown>,
  bytes: number,
  models: ReadonlyMap<string, ModelEntry>,
  defaultMaxOutputTokens: number,
  imageTokens = DEFAULT_IMAGE_TOKENS,
): GatewayRequest {
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
    checkInput(body['input']);
    return { endpoint, route: endpoint, body, model, stream: false, inputTokens: estimateInput(bytes, { urlBytes: 0, images: 0 }, imageTokens), outputTokens: 0 };
  }
  const images = messageImages(body['messages']);
  const tools = body['tools'];
  if (tools !== undefined && tools !== null && (!Array.isArray(tools) || tools.length > MAX_TOOLS)) throw bad(`tools must be an array of at most ${MAX_TOOLS} tools.`, 'tools');
  const perChoice = positiveInt(body, 'max_completion_tokens') ?? positiveInt(body, 'max_tokens') ?? defaultMaxOutputTokens;
  const n = positiveInt(body, 'n') ?? 1;
  if (n > MAX_CHOICES) throw bad(`n must be at most ${MAX_CHOICES}.`, 'n');
  capOutput(body, perChoice);
  return { endpoint, route: endpoint, body, model, stream: stream === true, inputTokens: estimateInput(bytes, images, imageTokens), outputTokens: perChoice * n };
}

/** A field that must be a positive integer when present (null counts as absent, as OpenAI reads it). */
function positiveInt(body: Record<string, unknown>, field: string): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw bad(`${field} must be a positive integer.`, field);
  return v;
}

/**
 * The upstream is asked for no more output per choice than was reserved: `max_completion_tokens`
 * (which every OpenAI model and current OpenAI-compatible servers read) is set when the client set
 * no limit, and a `max_tokens` sent beside a smaller `max_completion_tokens` is lowered to it.
 */
function capOutput(body: Record<string, unknown>, perChoice: number): void {
  const given = body['max_tokens'];
  if (body['max_completion_tokens'] === undefined || body['max_completion_tokens'] === null) {
    if (given === undefined || given === null) body['max_completion_tokens'] = perChoice;
  } else if (typeof given === 'number' && given > perChoice) body['max_tokens'] = perChoice;
}

/**
 * The input's upper bound in tokens: every byte of the request body as sent counts one token (a
 * byte-level BPE token, OpenAI's or Llama's, is at least one byte, so this bounds every text, name,
 * tool definition, `response_format` schema and message framing, whatever the language), plus 64
 * for the framing a provider adds; an image part counts `imageTokens` instead of its URL's bytes
 * (an image's tokens follow its size in pixels, not in bytes). Far above the real count for English
 * (about four bytes a token): the reservation is released at settlement, and only an upper bound
 * keeps every balance above minus one request's cost.
 */
function estimateInput(bytes: number, images: { urlBytes: number; images: number }, imageTokens: number): number {
  return bytes - images.urlBytes + images.images * imageTokens + 64;
}

/** Validates the messages; counts their image parts and the bytes of those parts' URLs. */
function messageImages(messages: unknown): { urlBytes: number; images: number } {
  if (!Array.isArray(messages) || messages.length === 0) throw bad('messages must be a non-empty array.', 'messages');
  let urlBytes = 0;
  let images = 0;
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    const at = `messages[${i}]`;
    if (!isRecord(m)) throw bad(`${at} must be an object.`, at);
    const role = m['role'];
    if (typeof role !== 'string' || !ROLES.has(role)) throw bad(`${at}.role must be one of ${[...ROLES].join(', ')}.`, `${at}.role`);
    const content = m['content'];
    if (typeof content === 'string') {
      // counted in the body's bytes
    } else if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        const part: unknown = content[j];
        if (!isRecord(part) || typeof part['type'] !== 'string') throw bad(`${at}.content[${j}] must be a content part with a type.`, `${at}.content`);
        const image = part['image_url'];
        if (part['type'] === 'image_url') {
          images++;
          const url = isRecord(image) ? image['url'] : image;
          if (typeof url === 'string') urlBytes += Buffer.byteLength(url, 'utf8');
        }
        // Audio and file parts count by their bytes (base64), far above their tokens.
      }
    } else if (content === null || content === undefined) {
      // An assistant turn that only called tools has no content.
      if (role !== 'assistant') throw bad(`${at}.content is required for role ${role}.`, `${at}.content`);
    } else throw bad(`${at}.content must be a string or an array of content parts.`, `${at}.content`);
  }
  return { urlBytes, images };
}

/** Validates an embeddings `input` (its tokens are counted in the body's bytes: a token id takes at least two, with its comma). */
function checkInput(input: unknown): void {
  if (typeof input === 'string') {
    if (input === '') throw bad('input must not be empty.', 'input');
    return;
  }
  if (!Array.isArray(input) || input.length === 0) throw bad('input must be a string or a non-empty array of strings (or of token arrays).', 'input');
  for (const item of input) {
    if (typeof item === 'string') continue;
    if (typeof item === 'number' && Number.isInteger(item)) continue;
    if (Array.isArray(item) && item.length > 0 && item.every((t) => typeof t === 'number' && Number.isInteger(t))) continue;
    throw bad('input must be a string or a non-empty array of strings (or of token arrays).', 'input');
  }
}
