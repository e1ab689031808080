/** One Server-Sent Event (the `event`, `data` and `id` fields); `comment` for a `:` line (a heartbeat). */
export type ServerSentEvent = { kind: 'event'; event: string; data: string; id: string | undefined } | { kind: 'comment' };

/** The longest event this reader holds (a put of 5000 large flags fits well within it). */
const MAX_EVENT_CHARS = 256 * 1024 * 1024;

/**
 * The events of a `text/event-stream` body, as the HTML standard parses them (LF, CRLF or CR line
 * ends, `field: value`, a blank line dispatches, `data` lines joined with LF). Not EventSource:
 * the SDK owns reconnecting, headers and Last-Event-ID, which EventSource would not let it set.
 */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  const chunks = body as unknown as AsyncIterable<Uint8Array>;
  for await (const chunk of withEnd(chunks)) {
    const last = chunk === undefined;
    buffer += last ? decoder.decode() : decoder.decode(chunk, { stream: true });
    if (buffer.length > MAX_EVENT_CHARS) throw new Error('an event stream sent an event longer than the SDK reads');
    let start = 0;
    for (;;) {
      const lf = buffer.indexOf('\n', start);
      const cr = buffer.indexOf('\r', start);
      const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk, unless there is none.
      if (end < 0 || (end === cr && end === buffer.length - 1 && !last)) break;
      const line = buffer.slice(start, end);
      start = end + (buffer[end] === '\r' && buffer[end + 1] === '\n' ? 2 : 1);
      if (line === '') {
        if (data.length > 0) yield { kind: 'event', event: event || 'message', data: data.join('\n'), id };
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) {
        yield { kind: 'comment' };
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
    }
    buffer = buffer.slice(start);
  }
}

/** The chunks, then undefined once the body has ended. */
async function* withEnd(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array | undefined> {
  yield* chunks;
  yield undefined;
}
