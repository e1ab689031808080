import { parseGatewayRequest } from '../openai/openai-request';
import type { Endpoint } from '../providers/provider.types';
import { bearerCredentials, type Dialect } from './dialect';
import { openAiError } from './openai-errors';

/**
 * One of the providers' own APIs (OpenAI's, which every provider speaks): the body is checked and
 * passed on (openai-request.ts), the answer, its events and the provider's refusals go out as the
 * provider sent them.
 */
function passThrough<E extends Endpoint>(route: E, path: string): Dialect<E> {
  return {
    route,
    path,
    credentials: bearerCredentials,
    request: (text, rules) => parseGatewayRequest(route, text, rules),
    answer: (upstream) => upstream,
    refusal: (_status, upstream) => upstream,
    // Embeddings are never streamed (refused with stream: true).
    stream: () => undefined,
    error: (error) => openAiError(error),
  };
}

/** OpenAI's Chat Completions (POST /v1/chat/completions). */
export const chatCompletions = passThrough('chat.completions', '/v1/chat/completions');

/** OpenAI's Embeddings (POST /v1/embeddings). */
export const embeddings = passThrough('embeddings', '/v1/embeddings');
