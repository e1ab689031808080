import { StringDecoder } from 'node:string_decoder';
import { choiceText, estimateTokens, isRecord, tokensForChars, usageFrom } from './usage';
import type { Usage } from './provider.types';

const EVENT_END = /\r?\n\r?\n/;

/** The data of one server-sent event (its `data:` lines joined), '' when it has none. */
export function sseEventData(event: string): string {
  let data = '';
  for (const line of event.split(/\r?\n/)) {
    if (line.startsWith('data:')) data += (data === '' ? '' : '\n') + line.slice(line.startsWith('data: ') ? 6 : 5);
  }
  return data;
}

/**
 * Reads an upstream's chat-completion server-sent events as they arrive and says what to pass on:
 * every event as the upstream wrote it, except the usage-only chunk (`choices: []`) when the client
 * did not ask for usage (the gateway always asks the upstream for it, to bill streams). Meanwhile it
 * keeps the usage (from any chunk, so also when it comes after `finish_reason`), the text delivered
 * (for an estimate when no usage arrives), and whether `finish_reason`, `[DONE]` or an error event came.
 */
export class SseRelay {
  private pending = '';
  private readonly decoder = new StringDecoder('utf8');
  /** Characters of text delivered: all the estimate needs, so a long stream's text is not kept. */
  private deliveredChars = 0;
  usage: Usage | undefined;
  sawFinish = false;
  sawDone = false;
  sawError = false;
  /** Events passed on so far (content, finish, error; not the usage chunk held back). */
  forwarded = 0;

  constructor(private readonly clientWantsUsage: boolean) {}

  /** Takes upstream bytes; returns the complete events to write to the client, or undefined when none is complete yet. */
  push(bytes: Buffer): Buffer | undefined {
    this.pending += this.decoder.write(bytes);
    let out = '';
    for (;;) {
      const m = EVENT_END.exec(this.pending);
      if (!m) break;
      const event = this.pending.slice(0, m.index);
      this.pending = this.pending.slice(m.index + m[0].length);
      if (this.take(event)) {
        out += `${event}\n\n`;
        this.forwarded++;
      }
    }
    return out === '' ? undefined : Buffer.from(out, 'utf8');
  }

  /** Usage as reported, or estimated from the input text given and the text delivered so far. */
  finalUsage(inputText: string): Usage {
    return this.usage ?? { inputTokens: estimateTokens(inputText), outputTokens: tokensForChars(this.deliveredChars), estimated: true };
  }

  /** Reads one event; whether it is passed on. */
  private take(event: string): boolean {
    const data = sseEventData(event);
    if (data === '') return event.trim() !== '';
    if (data === '[DONE]') {
      this.sawDone = true;
      return true;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return true;
    }
    if (!isRecord(chunk)) return true;
    if (chunk.error !== undefined && chunk.error !== null) this.sawError = true;
    const usage = usageFrom(chunk.usage);
    if (usage) this.usage = usage;
    if (Array.isArray(chunk.choices)) {
      for (const c of chunk.choices) {
        if (!isRecord(c)) continue;
        this.deliveredChars += choiceText(c.delta).length;
        if (c.finish_reason !== null && c.finish_reason !== undefined) this.sawFinish = true;
      }
      if (usage && chunk.choices.length === 0 && !this.clientWantsUsage) return false;
    }
    return true;
  }
}
