import { choiceText, estimateTokens, jsonUsage, requestText } from './usage';

const buf = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

describe('usage', () => {
  it('estimates a token per four characters, rounding up', () => {
    expect([estimateTokens(''), estimateTokens('abc'), estimateTokens('abcd'), estimateTokens('abcde')]).toEqual([0, 1, 1, 2]);
  });

  it('reads the text a request sends: string and text-part contents, embedding input as a string or array', () => {
    const chat = { messages: [{ role: 'system', content: 'ab' }, { role: 'user', content: [{ type: 'text', text: 'cd' }, { type: 'image_url', image_url: { url: 'x' } }] }] };
    expect(requestText('chat.completions', chat)).toBe('abcd');
    expect(requestText('embeddings', { input: 'xyz' })).toBe('xyz');
    expect(requestText('embeddings', { input: ['x', 'y', 3] })).toBe('xy');
    expect(requestText('chat.completions', { messages: 'nonsense' })).toBe('');
  });

  it("counts content, refusals and tool calls' names and arguments as delivered text", () => {
    expect(choiceText({ content: 'hi', refusal: 'no', tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] })).toBe('hinof{"a":1}');
    // A streamed tool call: its name in the first delta, its arguments in the next ones; the legacy function_call too.
    expect(choiceText({ tool_calls: [{ index: 0, id: 'c', function: { name: 'lookup_weather', arguments: '' } }] })).toBe('lookup_weather');
    expect(choiceText({ function_call: { name: 'g', arguments: '{}' } })).toBe('g{}');
    expect(choiceText(null)).toBe('');
  });

  it("takes the upstream's usage; embeddings have input tokens only", () => {
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    expect(jsonUsage('chat.completions', {}, buf({ choices: [], usage }))).toEqual({ inputTokens: 10, outputTokens: 5, estimated: false });
    expect(jsonUsage('embeddings', {}, buf({ data: [], usage: { prompt_tokens: 4, total_tokens: 4 } }))).toEqual({ inputTokens: 4, outputTokens: 0, estimated: false });
  });

  it('estimates when usage is missing, malformed, or the answer is not JSON', () => {
    const body = { messages: [{ role: 'user', content: '12345678' }] };
    const answer = { choices: [{ message: { content: null, tool_calls: [{ function: { arguments: '{"city":"Paris"}' } }] } }] };
    expect(jsonUsage('chat.completions', body, buf(answer))).toEqual({ inputTokens: 2, outputTokens: 4, estimated: true });
    expect(jsonUsage('chat.completions', body, buf({ ...answer, usage: { prompt_tokens: 'many' } }))).toMatchObject({ estimated: true });
    expect(jsonUsage('chat.completions', body, Buffer.from('<html>'))).toEqual({ inputTokens: 2, outputTokens: 0, estimated: true });
  });
});
