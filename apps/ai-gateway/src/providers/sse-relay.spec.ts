import { SseRelay } from './sse-relay';

const chunk = (content: string, finish: string | null = null): string =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: finish }], usage: null })}\n\n`;
const usageChunk = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } })}\n\n`;

describe('SseRelay', () => {
  it('passes events on whole, however the bytes are cut, multi-byte characters included', () => {
    const relay = new SseRelay(false);
    const all = Buffer.from(chunk('héllo ') + chunk('wörld', 'stop') + usageChunk + 'data: [DONE]\n\n');
    let out = '';
    for (let i = 0; i < all.length; i += 3) out += relay.push(all.subarray(i, i + 3))?.toString('utf8') ?? '';
    expect(out).toBe(chunk('héllo ') + chunk('wörld', 'stop') + 'data: [DONE]\n\n');
    expect(relay.usage).toEqual({ inputTokens: 7, outputTokens: 2, estimated: false });
    expect(relay).toMatchObject({ sawFinish: true, sawDone: true, sawError: false, forwarded: 3 });
  });

  it('keeps the usage chunk when the client asked for it', () => {
    const relay = new SseRelay(true);
    expect(relay.push(Buffer.from(chunk('a', 'stop') + usageChunk))?.toString()).toBe(chunk('a', 'stop') + usageChunk);
  });

  it('reads CRLF framing and multi-line data', () => {
    const relay = new SseRelay(false);
    const out = relay.push(Buffer.from(': keep-alive\r\n\r\ndata: {"choices":[{"delta":\r\ndata: {"content":"hi"}}]}\r\n\r\n'));
    expect(out?.toString()).toContain('keep-alive');
    expect(relay.finalUsage('')).toEqual({ inputTokens: 0, outputTokens: 1, estimated: true });
  });

  it('holds back an incomplete event until its end arrives', () => {
    const relay = new SseRelay(false);
    const text = chunk('abc');
    expect(relay.push(Buffer.from(text.slice(0, -1)))).toBeUndefined();
    expect(relay.push(Buffer.from('\n'))?.toString()).toBe(text);
  });

  it('estimates from the text delivered when no usage came, and notices error events', () => {
    const relay = new SseRelay(false);
    relay.push(Buffer.from(chunk('12345678') + 'data: {"error":{"message":"overloaded"}}\n\n'));
    expect(relay.sawError).toBe(true);
    expect(relay.finalUsage('x'.repeat(9))).toEqual({ inputTokens: 3, outputTokens: 2, estimated: true });
  });
});
