import { readServerSentEvents, type ServerSentEvent } from './event-stream';

async function read(chunks: string[]): Promise<ServerSentEvent[]> {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
  const out: ServerSentEvent[] = [];
  for await (const e of readServerSentEvents(body)) out.push(e);
  return out;
}

describe('readServerSentEvents', () => {
  it('parses events, ids, comments and multi-line data as the HTML standard does', async () => {
    expect(await read(['id: a:1\nevent: put\ndata: {"flags":[]}\n\n', ':\n\n', 'data: one\ndata: two\n\n'])).toEqual([
      { kind: 'event', event: 'put', data: '{"flags":[]}', id: 'a:1' },
      { kind: 'comment' },
      // The id carries over to later events (the stream's last event id), the type does not.
      { kind: 'event', event: 'message', data: 'one\ntwo', id: 'a:1' },
    ]);
  });

  it('reads events split anywhere across chunks, with CRLF or CR line ends', async () => {
    const text = 'id: x:2\r\nevent: patch\r\ndata: {"flags":[{"key":"k"}]}\r\n\r\nevent: delete\rdata: {"keys":["k"]}\r\r';
    for (const size of [1, 2, 3, 7, text.length]) {
      const chunks = [];
      for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
      expect(await read(chunks)).toEqual([
        { kind: 'event', event: 'patch', data: '{"flags":[{"key":"k"}]}', id: 'x:2' },
        { kind: 'event', event: 'delete', data: '{"keys":["k"]}', id: 'x:2' },
      ]);
    }
  });

  it('dispatches nothing for an event without data, nor for an unfinished one', async () => {
    expect(await read(['event: put\n\n', 'data: half'])).toEqual([]);
  });
});
