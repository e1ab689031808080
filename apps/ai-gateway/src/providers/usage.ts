import type { Endpoint, Usage } from './provider.types';

/**
 * Token counts when the upstream sends none (a stream cut off before its usage chunk, a server that
 * leaves `usage` out): about four characters per token, OpenAI's rule of thumb for English text, so
 * ceil(characters / 4) of the text sent (message contents, embedding input) and of the text delivered
 * (content, refusals, tool calls' names and arguments). Rows built on it are marked `estimated`; the
 * model's own tokenizer would differ by some percent, and never by the whole answer.
 */
export const tokensForChars = (characters: number): number => Math.ceil(characters / 4);
export const estimateTokens = (text: string): number => tokensForChars(text.length);

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a message `content`: a string, or the `text` of its text parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) if (isRecord(part) && typeof part.text === 'string') out += part.text;
  return out;
}

/** The text a request sends to the model (messages, tools, response schema), for the input estimate. */
export function requestText(endpoint: Endpoint, body: Record<string, unknown>): string {
  if (endpoint === 'embeddings') {
    const input = body.input;
    if (typeof input === 'string') return input;
    return Array.isArray(input) ? input.filter((i): i is string => typeof i === 'string').join('') : '';
  }
  let out = '';
  if (Array.isArray(body.messages)) for (const m of body.messages) if (isRecord(m)) out += contentText(m.content);
  // Tool definitions and a response schema are input the provider reads too.
  for (const field of ['tools', 'functions', 'response_format']) if (body[field] !== undefined) out += JSON.stringify(body[field]);
  return out;
}

/** A function call's name and arguments (each as far as it came, in a streamed delta). */
function callText(fn: unknown): string {
  if (!isRecord(fn)) return '';
  return (typeof fn.name === 'string' ? fn.name : '') + (typeof fn.arguments === 'string' ? fn.arguments : '');
}

/** The text of a choice's `message` (non-streamed) or `delta` (streamed): content, refusal, tool calls' names and arguments (and the legacy `function_call`'s). */
export function choiceText(part: unknown): string {
  if (!isRecord(part)) return '';
  let out = contentText(part.content);
  if (typeof part.refusal === 'string') out += part.refusal;
  if (Array.isArray(part.tool_calls)) for (const call of part.tool_calls) if (isRecord(call)) out += callText(call.function);
  out += callText(part.function_call);
  return out;
}

/** OpenAI's `usage` object as our Usage, or undefined when it is missing or malformed. */
export function usageFrom(usage: unknown): Usage | undefined {
  if (!isRecord(usage) || typeof usage.prompt_tokens !== 'number') return undefined;
  const output = typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0;
  const details = usage.prompt_tokens_details;
  const cached = isRecord(details) && typeof details.cached_tokens === 'number' && Number.isSafeInteger(details.cached_tokens) && details.cached_tokens > 0 ? details.cached_tokens : 0;
  // Cached tokens are part of prompt_tokens; a count above it (a provider's error) is cut to it.
  return { inputTokens: usage.prompt_tokens, outputTokens: output, estimated: false, ...(cached > 0 ? { cachedTokens: Math.min(cached, usage.prompt_tokens) } : {}) };
}

/** Usage of a non-streamed 2xx answer: the upstream's, else estimated from the texts (embeddings have input only). */
export function jsonUsage(endpoint: Endpoint, requestBody: Record<string, unknown>, answer: Buffer): Usage {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const given = isRecord(parsed) ? usageFrom(parsed.usage) : undefined;
  if (given) return endpoint === 'embeddings' ? { ...given, outputTokens: 0 } : given;
  let delivered = '';
  if (endpoint === 'chat.completions' && isRecord(parsed) && Array.isArray(parsed.choices)) {
    for (const c of parsed.choices) if (isRecord(c)) delivered += choiceText(c.message);
  }
  return { inputTokens: estimateTokens(requestText(endpoint, requestBody)), outputTokens: estimateTokens(delivered), estimated: true };
}
