import { exceedsJsonDepth, MAX_JSON_DEPTH } from '@flagship/problem-details';
import { GatewayError } from '../gateway.errors';
import type { ModelEntry } from '../models/model-catalogue';
import type { Endpoint } from '../providers/provider.types';
import type { GatewayRoute } from '../dialects/dialects';
import { originOf } from '../media/image-parts';
import { checkMediaUrl, MediaRefused, type MediaPolicy } from '../media/media-url';

/** A request body as the gateway needs it; `body` is the client's object, passed on untouched (or the chat body a dialect made of it). */
export interface GatewayRequest {
  /** The provider endpoint called. */
  endpoint: Endpoint;
  /** The gateway route asked (the ledger's and the metrics' endpoint): the provider endpoint, or `messages` / `responses`. */
  route: GatewayRoute;
  /** For a translated API (Dialect): the client's own body, before its translation. */
  original?: Record<string, unknown>;
  body: Record<string, unknown>;
  model: ModelEntry;
  stream: boolean;
  /** Upper bounds, for the reservation and the token rate limit (never billed: the provider's usage is); see estimateInput. */
  inputTokens: number;
  /** The output reserved: max tokens per choice x `n`; the upstream is asked for no more (capOutput). */
  outputTokens: number;
  /** Its https image URLs, when it has any: fetched by the gateway for providers that would fetch them themselves (MediaStep). */
  remoteImages?: RemoteImage[];
}

/** An https image URL of a request, checked by the rule (checkMediaUrl), not yet resolved. */
export interface RemoteImage {
  /** The image_url object whose `url` becomes the fetched image's data: URL. */
  target: Record<string, unknown>;
  url: URL;
  /** Where the client put it (its errors name this). */
  param: string;
}

/** What a request is checked and estimated against (the gateway's settings). */
export interface RequestRules {
  models: ReadonlyMap<string, ModelEntry>;
  /** Output tokens reserved per choice when the request sets no limit (GATEWAY_DEFAULT_MAX_OUTPUT_TOKENS). */
  defaultMaxOutputTokens: number;
  /** Input tokens an image part counts (GATEWAY_IMAGE_TOKENS). */
  imageTokens: number;
  media: MediaPolicy;
}

/** OpenAI's own upper bound for `n`. */
const MAX_CHOICES = 128;
/** OpenAI's own upper bound for `tools`. */
export const MAX_TOOLS = 128;

const ROLES: ReadonlySet<string> = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

/**
 * The content parts the gateway counts: text by its bytes, images as `imageTokens` each. Audio,
 * video and file parts (`input_audio`, `audio_url`, `video_url`, `file`) are refused: a model
 * server would fetch or decode them at a cost the estimate does not bound.
 */
const PART_TYPES: ReadonlySet<string> = new Set(['text', 'image_url', 'refusal']);

/**
 * Chat Completions fields that change what the operator pays or how the conversation is kept,
 * refused (400 naming the field) rather than passed on; `allowed` is the value that changes
 * nothing (null always counts as absent). Every other field passes through (CONTRACT.md section 7).
 */
const REFUSED_FIELDS: ReadonlyArray<{ field: string; allowed?: (v: unknown) => boolean; why: string }> = [
  { field: 'store', allowed: (v) => v === false, why: 'this gateway keeps no completions, and a stored one would keep the conversation at the provider. Send store: false or leave it out.' },
  { field: 'metadata', why: 'it is kept with stored completions, which this gateway does not make.' },
  { field: 'service_tier', why: "it changes the provider's price (priority, flex or scale tier), and the gateway bills every request at its catalogue's prices." },
  { field: 'web_search_options', why: 'web search is charged by the provider per search and sends the conversation to a search engine.' },
  { field: 'prediction', why: "the provider bills a prediction's rejected tokens as output, beyond what the gateway reserves." },
  { field: 'audio', why: 'audio output is priced apart from text tokens, and the gateway counts text.' },
  { field: 'modalities', allowed: (v) => Array.isArray(v) && v.length === 1 && v[0] === 'text', why: 'only text output is counted by the gateway: send ["text"] or leave it out.' },
  {
    field: 'prompt_cache_retention',
    allowed: (v) => v === 'in_memory' || v === 'in-memory',
    why: "extended retention keeps the prompt's cache at the provider for up to a day; leave it out (or in_memory).",
  },
];

const bad = (message: string, param: string | null): GatewayError => new GatewayError(400, 'invalid_request', message, param);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validates what the gateway itself reads (`model`, `messages` and their content parts, image URLs
 * by the media rule, `input`, `stream`, `stream_options`, `n`, `max_tokens`/`max_completion_tokens`)
 * and refuses the fields that change the operator's cost or data handling (REFUSED_FIELDS); every
 * other field (`tools`, `response_format`, `temperature`, `seed`, ...) goes to the provider as sent,
 * but for the output cap (capOutput).
 */
export function parseGatewayRequest(endpoint: Endpoint, text: string, rules: RequestRules): GatewayRequest {
  return requestOf(endpoint, parseJsonObject(text), Buffer.byteLength(text, 'utf8'), rules);
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
export function requestOf(endpoint: Endpoint, body: Record<string, unknown>, bytes: number, rules: RequestRules): GatewayRequest {
  const { imageTokens } = rules;
  const modelId = body['model'];
  if (typeof modelId !== 'string' || modelId === '') throw bad('model is required: a model id from /v1/models.', 'model');
  const model = rules.models.get(modelId);
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
    // vLLM's multimodal embeddings read chat messages, images fetched by the server included; the gateway counts `input` only.
    if (body['messages'] !== undefined && body['messages'] !== null) throw bad('messages is not supported on embeddings by this gateway; send input.', 'messages');
    checkInput(body['input']);
    return { endpoint, route: endpoint, body, model, stream: false, inputTokens: estimateInput(bytes, { urlBytes: 0, images: 0 }, imageTokens), outputTokens: 0 };
  }
  refuseFields(body);
  const images = messageParts(body['messages'], rules.media);
  const tools = body['tools'];
  if (tools !== undefined && tools !== null && (!Array.isArray(tools) || tools.length > MAX_TOOLS)) throw bad(`tools must be an array of at most ${MAX_TOOLS} tools.`, 'tools');
  const perChoice = positiveInt(body, 'max_completion_tokens') ?? positiveInt(body, 'max_tokens') ?? rules.defaultMaxOutputTokens;
  const n = positiveInt(body, 'n') ?? 1;
  if (n > MAX_CHOICES) throw bad(`n must be at most ${MAX_CHOICES}.`, 'n');
  capOutput(body, perChoice);
  const request: GatewayRequest = { endpoint, route: endpoint, body, model, stream: stream === true, inputTokens: estimateInput(bytes, images, imageTokens), outputTokens: perChoice * n };
  if (images.remote.length > 0) request.remoteImages = images.remote;
  return request;
}

/** Refuses the fields that change the operator's cost or data handling (REFUSED_FIELDS). */
function refuseFields(body: Record<string, unknown>): void {
  for (const { field, allowed, why } of REFUSED_FIELDS) {
    const v = body[field];
    if (v === undefined || v === null || allowed?.(v) === true) continue;
    throw bad(`${field} is not supported by this gateway: ${why}`, field);
  }
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

/** The image_url part's URL checked by the media rule; a refusal names where the client put it. */
function checkImage(part: Record<string, unknown>, at: string, media: MediaPolicy): { url: unknown; target: Record<string, unknown>; param: string; remote: URL | undefined } {
  const given = part['image_url'];
  // The bare-string form some clients send becomes OpenAI's object, so the URL can be replaced.
  const target = isRecord(given) ? given : { url: given };
  if (!isRecord(given)) part['image_url'] = target;
  const url = target['url'];
  const param = originOf(target) ?? (isRecord(given) ? `${at}.image_url.url` : `${at}.image_url`);
  try {
    const checked = checkMediaUrl(url, media);
    return { url, target, param, remote: checked.kind === 'remote' ? checked.url : undefined };
  } catch (err) {
    if (err instanceof MediaRefused) throw bad(`${param}: ${err.message}`, param);
    throw err;
  }
}

/** Validates the messages and their parts; counts their image parts and the bytes of those parts' URLs; lists the https ones. */
function messageParts(messages: unknown, media: MediaPolicy): { urlBytes: number; images: number; remote: RemoteImage[] } {
  if (!Array.isArray(messages) || messages.length === 0) throw bad('messages must be a non-empty array.', 'messages');
  let urlBytes = 0;
  let images = 0;
  const remote: RemoteImage[] = [];
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
        const pat = `${at}.content[${j}]`;
        if (!isRecord(part) || typeof part['type'] !== 'string') throw bad(`${pat} must be a content part with a type.`, `${at}.content`);
        if (!PART_TYPES.has(part['type'])) {
          throw bad(
            `${pat}: content parts of type ${part['type'].slice(0, 50)} are not supported by this gateway (text, image_url and refusal are; audio, video and file parts are not counted toward a request's cost).`,
            `${pat}.type`,
          );
        }
        if (part['type'] === 'image_url') {
          images++;
          const image = checkImage(part, pat, media);
          if (typeof image.url === 'string') urlBytes += Buffer.byteLength(image.url, 'utf8');
          if (image.remote !== undefined) remote.push({ target: image.target, url: image.remote, param: image.param });
        }
      }
    } else if (content === null || content === undefined) {
      // An assistant turn that only called tools has no content.
      if (role !== 'assistant') throw bad(`${at}.content is required for role ${role}.`, `${at}.content`);
    } else throw bad(`${at}.content must be a string or an array of content parts.`, `${at}.content`);
  }
  return { urlBytes, images, remote };
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
