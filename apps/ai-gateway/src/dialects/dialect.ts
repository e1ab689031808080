import type { IncomingHttpHeaders } from 'node:http';
import type { LeanError } from '@flagship/lean-http';
import { type GatewayRequest, parseJsonObject, requestOf, type RequestRules } from '../openai/openai-request';
import type { Endpoint } from '../providers/provider.types';
import { sseEventData } from '../providers/sse-relay';
import { isRecord } from '../providers/usage';
import type { GatewayRoute } from './dialects';

/**
 * One API the gateway answers, and everything the gateway must know of it: where it is served, how
 * its caller's access token is sent, its request as the gateway's (validated, translated, estimated),
 * the provider's answer, stream and refusal in its terms, and the gateway's own errors in its error
 * body. The pipeline between (admission, provider, settlement) is the same for every API; a new API
 * is one file making such an object, listed in DIALECTS (dialects.ts).
 */
export interface Dialect<Route extends string = string> {
  /** Its name on the ledger row (`endpoint`) and in the metrics; a new name needs the ledger's check widened (a migration). */
  readonly route: Route;
  /** Its POST path. */
  readonly path: string;
  /** The request's headers with its access token as `Authorization: Bearer`, which is where the token step reads it. */
  credentials(headers: IncomingHttpHeaders): IncomingHttpHeaders;
  /** The client's body (JSON text) as the gateway's request; throws GatewayError (400, 404) naming the field at fault where the client put it. */
  request(text: string, rules: RequestRules): GatewayRequest;
  /** The provider's 2xx JSON answer as the client's answer. */
  answer(upstream: Buffer, request: GatewayRequest, requestId: string): string | Buffer;
  /** The provider's refusal (its status and OpenAI error body) in this API's error body, keeping the status. */
  refusal(status: number, upstream: Buffer): string | Buffer;
  /** How the provider's chat-completion events become this API's, or undefined when they go out as they are. */
  stream(request: GatewayRequest, requestId: string): StreamTranslator | undefined;
  /** The gateway's own refusal (a pipeline step's, or the HTTP layer's) in this API's error body. */
  error(error: LeanError, requestId: string): string;
}

/** The headers as they are: the token is sent as `Authorization: Bearer`. */
export const bearerCredentials = (headers: IncomingHttpHeaders): IncomingHttpHeaders => headers;

/** What a translated API's answer needs to know of its request. */
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
 * How an API other than OpenAI's is answered by translating it to and from OpenAI's Chat Completions
 * (Anthropic's Messages, OpenAI's Responses): its body becomes a chat-completions body, which goes
 * through the same pipeline (estimate, admission, provider, settlement), and the provider's answer is
 * translated back.
 */
export interface ChatTranslation {
  /**
   * The chat-completions body for the client's body; throws GatewayError (400) for what the dialect
   * refuses or the gateway cannot honour. A streamed body asks for usage (stream_options.include_usage),
   * so the translator sees it.
   */
  toChat(body: Record<string, unknown>): Record<string, unknown>;
  /** A 2xx chat completion's JSON (parsed; undefined when it was not JSON) in the dialect's answer. */
  answer(chat: unknown, context: DialectContext): string;
  /** An upstream refusal (its OpenAI error body) in the dialect's error body, keeping the status. */
  refusal(status: number, body: Buffer): string;
  stream(context: DialectContext): StreamTranslator;
}

/**
 * A translated API's Dialect. Its request is checked as the chat body it makes, whose bytes bound its
 * input as a Chat Completions request's do (estimateInput); the answer's context is made only here,
 * so the Chat Completions hot path allocates none.
 */
export function translatedDialect<Route extends GatewayRoute>(api: Pick<Dialect<Route>, 'route' | 'path' | 'credentials' | 'error'>, t: ChatTranslation): Dialect<Route> {
  const context = (request: GatewayRequest, requestId: string): DialectContext => ({ requestId, model: request.model.id, body: request.original ?? request.body });
  return {
    ...api,
    request(text, rules) {
      const body = parseJsonObject(text);
      const chat = t.toChat(body);
      const request = requestOf(CHAT, chat, Buffer.byteLength(JSON.stringify(chat), 'utf8'), rules);
      return { ...request, route: api.route, original: body };
    },
    answer: (upstream, request, requestId) => t.answer(parseJson(upstream), context(request, requestId)),
    refusal: (status, upstream) => t.refusal(status, upstream),
    stream: (request, requestId) => t.stream(context(request, requestId)),
  };
}

const CHAT: Endpoint = 'chat.completions';

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
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
