import type { Endpoint } from '../providers/provider.types';
import { sseEventData } from '../providers/sse-relay';
import { isRecord } from '../providers/usage';

/** A gateway route as the ledger and the metrics name it: a provider endpoint, or an API translated to chat completions. */
export type GatewayRoute = Endpoint | 'messages' | 'responses';

/** What a dialect's answer needs to know of its request. */
export interface DialectContext {
  /** The gateway's request id: the answer's own id is made from it. */
  requestId: string;
  /** The model asked for, as the client named it. */
  model: string;
  /** The client's own body, parsed (before its translation). */
  body: Record<string, unknown>;
}

/** Turns the upstream's chat-completion events into the dialect's events, as they arrive. */
export interface StreamTranslator {
  /** Complete upstream SSE events (as the relay passes them on); the dialect's events to write, if any. */
  push(events: Buffer): Buffer | undefined;
  /** The stream ended (any way): what still has to be written, if anything. */
  end(): Buffer | undefined;
}

/**
 * An API the gateway speaks besides OpenAI's Chat Completions (Anthropic's Messages, OpenAI's
 * Responses): its request is translated into a chat-completions body, which goes through the same
 * pipeline (estimate, admission, provider, settlement), and the provider's answer is translated back.
 */
export interface Dialect {
  readonly route: 'messages' | 'responses';
  /**
   * The chat-completions body for the client's body; throws GatewayError (400) for what the dialect
   * refuses or the gateway cannot honour. A streamed body asks for usage (stream_options.include_usage),
   * so the translator sees it.
   */
  toChat(body: Record<string, unknown>): Record<string, unknown>;
  /** A 2xx chat completion's JSON in the dialect's answer. */
  answer(chat: unknown, context: DialectContext): string;
  /** An upstream refusal (its OpenAI error body) in the dialect's error body, keeping the status. */
  refusal(status: number, body: Buffer): string;
  stream(context: DialectContext): StreamTranslator;
}

export { isRecord };

/** The JSON data of each complete SSE event in `bytes` (as the relay passes them on: whole events only); '[DONE]' as the string; unparsable data skipped. */
export function sseData(bytes: Buffer): unknown[] {
  const out: unknown[] = [];
  for (const event of bytes.toString('utf8').split(/\r?\n\r?\n/)) {
    const data = sseEventData(event);
    if (data === '') continue;
    if (data === '[DONE]') {
      out.push('[DONE]');
      continue;
    }
    try {
      out.push(JSON.parse(data));
    } catch {
      // Not JSON: nothing a translator can read.
    }
  }
  return out;
}

/** The message of an upstream's OpenAI error body, or a generic one. */
export function upstreamMessage(body: Buffer | string, status: number): string {
  try {
    const parsed: unknown = JSON.parse(body.toString());
    if (isRecord(parsed) && isRecord(parsed.error) && typeof parsed.error.message === 'string') return parsed.error.message;
  } catch {
    // fall through
  }
  return `The provider refused the request (${status}).`;
}
