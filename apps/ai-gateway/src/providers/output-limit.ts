import type { Endpoint, ProviderKey } from './provider.types';

/**
 * The chat body an upstream is sent, told the output limit in the field it honours. The pipeline
 * leaves the limit in `max_completion_tokens` (or the client's own `max_tokens`; openai-request's
 * capOutput), which OpenAI's API (`hosted`) reads, and whose reasoning models refuse `max_tokens`.
 * OpenAI-compatible servers (`inhouse`: vLLM, llama.cpp, TGI, Ollama) read `max_tokens`, some of them
 * only that: they get both, the same limit, so none produces more than was reserved.
 */
export function withOutputLimit(provider: ProviderKey, endpoint: Endpoint, body: Record<string, unknown>): Record<string, unknown> {
  if (provider !== 'inhouse' || endpoint !== 'chat.completions') return body;
  const completion = body['max_completion_tokens'];
  const given = body['max_tokens'];
  const limit = typeof completion === 'number' ? completion : given;
  if (typeof limit !== 'number') return body;
  // A smaller max_tokens the client sent stands (capOutput already lowered a larger one).
  return { ...body, max_tokens: typeof given === 'number' && given < limit ? given : limit, max_completion_tokens: limit };
}
