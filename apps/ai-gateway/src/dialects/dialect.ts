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

/** One tool call's piece in a chat-completion chunk (its first piece names it; the later ones add arguments). */
export interface ToolCallDelta {
  /** The upstream's tool call index: a new index opens a new call. */
  index: number;
  /** The call's id, when this piece says it. */
  id: string | undefined;
  name: string;
  /** Arguments' text added by this piece ('' when none). */
  arguments: string;
}

/**
 * The walk over the upstream's chat-completion chunks that every dialect's stream shares: whole SSE
 * events in, the first choice's text and tool-call deltas, its finish reason, the usage chunk, an
 * upstream error event (after which nothing more is written), `[DONE]` or a clean end closing the
 * stream once. A dialect says what each of those is in its own events.
 */
export abstract class ChatStreamTranslator implements StreamTranslator {
  private started = false;
  private finished = false;
  /** The first choice's finish_reason once a chunk gave one, and that chunk's choice. */
  protected finish: unknown;
  protected finishChoice: Record<string, unknown> | undefined;
  /** The usage chunk's `usage` (OpenAI sends it last, with stream_options.include_usage). */
  protected usage: unknown;

  /** What opens the dialect's stream, written before anything else. */
  protected abstract opening(): string;
  /** What closes it (after the opening, once), from what was read. */
  protected abstract closing(): string;
  /** The dialect's error event for the upstream's error object. */
  protected abstract error(e: Record<string, unknown>): string;
  protected abstract text(content: string): string;
  protected abstract toolCall(call: ToolCallDelta): string;

  push(bytes: Buffer): Buffer | undefined {
    let out = '';
    for (const data of sseData(bytes)) {
      if (this.finished) break;
      if (data === '[DONE]') {
        out += this.close();
        continue;
      }
      if (!isRecord(data)) continue;
      if (data.error !== undefined && data.error !== null) {
        out += this.error(isRecord(data.error) ? data.error : {});
        this.finished = true;
        break;
      }
      out += this.start();
      if (data.usage !== undefined && data.usage !== null) this.usage = data.usage;
      const choice = Array.isArray(data.choices) ? data.choices.find((c: unknown) => isRecord(c) && (c.index ?? 0) === 0) : undefined;
      if (!isRecord(choice)) continue;
      const delta = isRecord(choice.delta) ? choice.delta : {};
      if (typeof delta.content === 'string' && delta.content !== '') out += this.text(delta.content);
      if (Array.isArray(delta.tool_calls)) {
        for (const call of delta.tool_calls) {
          if (!isRecord(call)) continue;
          const fn = isRecord(call.function) ? call.function : {};
          out += this.toolCall({
            index: typeof call.index === 'number' ? call.index : 0,
            id: typeof call.id === 'string' ? call.id : undefined,
            name: typeof fn.name === 'string' ? fn.name : '',
            arguments: typeof fn.arguments === 'string' ? fn.arguments : '',
          });
        }
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        this.finish = choice.finish_reason;
        this.finishChoice = choice;
      }
    }
    return out === '' ? undefined : Buffer.from(out, 'utf8');
  }

  end(): Buffer | undefined {
    // A stream that ended cleanly without [DONE] (some servers) is closed all the same.
    if (this.finished || !this.started || this.finish === undefined) return undefined;
    return Buffer.from(this.close(), 'utf8');
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    return this.opening();
  }

  private close(): string {
    if (this.finished) return '';
    this.finished = true;
    return this.start() + this.closing();
  }
}

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
