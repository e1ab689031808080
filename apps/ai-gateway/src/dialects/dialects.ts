import type { OutgoingHttpHeaders } from 'node:http';
import { type ErrorWriter, type Exchange, JSON_TYPE, type LeanError } from '@flagship/lean-http';
import { anthropicMessages } from './anthropic-messages';
import type { Dialect } from './dialect';
import { openAiResponses } from './openai-responses';
import { chatCompletions, embeddings } from './pass-through';

/** Every API the gateway answers: each is served at its path by the same pipeline (install-gateway.ts). */
export const DIALECTS = [chatCompletions, embeddings, anthropicMessages, openAiResponses] as const;

/** A gateway route as the ledger and the metrics name it. */
export type GatewayRoute = (typeof DIALECTS)[number]['route'];

const BY_PATH: ReadonlyMap<string, Dialect> = new Map(DIALECTS.map((d) => [d.path, d]));

/**
 * The API a request was sent to: its route's, or for a path below one the gateway does not serve
 * (Anthropic's /v1/messages/count_tokens) that API's, so its SDK reads the 404; Chat Completions'
 * for the rest (/v1/models, unknown paths).
 */
export function dialectOf(x: Exchange): Dialect {
  const routed = BY_PATH.get(x.route);
  if (routed !== undefined) return routed;
  const url = x.req.url ?? '';
  return DIALECTS.find((d) => url.startsWith(`${d.path}/`)) ?? chatCompletions;
}

/** A refusal in the dialect's error body; every answer also tells the time the gateway spent (`x-gateway-overhead-ms`). */
export function sendError(x: Exchange, dialect: Dialect, error: LeanError, headers?: OutgoingHttpHeaders): void {
  x.send(error.status, JSON_TYPE, { ...headers, 'x-gateway-overhead-ms': x.elapsedMs().toFixed(2) }, dialect.error(error, x.requestId));
}

/** The HTTP layer's own refusals under /v1 (unknown routes, wrong methods, bodies refused, failures) in the API's error body. */
export const gatewayErrorWriter: ErrorWriter = (x, error, headers) => sendError(x, dialectOf(x), error, headers);
