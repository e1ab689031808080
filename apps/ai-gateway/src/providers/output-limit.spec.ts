import { parseModelCatalogue } from '../models/model-catalogue';
import { parseGatewayRequest } from '../openai/openai-request';
import { withOutputLimit } from './output-limit';

const models = parseModelCatalogue('');
const rules = { models, defaultMaxOutputTokens: 1024, imageTokens: 50_000, media: { maxBytes: 5 * 1024 * 1024, allowLoopback: false } };
/** The body as the pipeline hands it to the provider layer (the output cap applied). */
const capped = (body: Record<string, unknown>) => parseGatewayRequest('chat.completions', JSON.stringify({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], ...body }), rules).body;

describe('withOutputLimit', () => {
  it('tells inhouse the limit reserved in max_tokens as well as max_completion_tokens, whichever the client sent', () => {
    expect(withOutputLimit('inhouse', 'chat.completions', capped({}))).toMatchObject({ max_tokens: 1024, max_completion_tokens: 1024 });
    expect(withOutputLimit('inhouse', 'chat.completions', capped({ max_completion_tokens: 50 }))).toMatchObject({ max_tokens: 50, max_completion_tokens: 50 });
    expect(withOutputLimit('inhouse', 'chat.completions', capped({ max_tokens: 70 }))).toMatchObject({ max_tokens: 70, max_completion_tokens: 70 });
    // Both sent: the smaller max_tokens stands, a larger one was lowered to the reservation's.
    expect(withOutputLimit('inhouse', 'chat.completions', capped({ max_tokens: 30, max_completion_tokens: 50 }))).toMatchObject({ max_tokens: 30, max_completion_tokens: 50 });
    expect(withOutputLimit('inhouse', 'chat.completions', capped({ max_tokens: 90, max_completion_tokens: 50 }))).toMatchObject({ max_tokens: 50, max_completion_tokens: 50 });
  });

  it("leaves hosted's body as the pipeline made it (OpenAI's reasoning models refuse max_tokens), and embeddings alone", () => {
    const body = capped({ max_completion_tokens: 50 });
    expect(withOutputLimit('hosted', 'chat.completions', body)).toBe(body);
    expect(body).not.toHaveProperty('max_tokens');
    const embeddings = { model: 'fake-embed-1', input: 'x' };
    expect(withOutputLimit('inhouse', 'embeddings', embeddings)).toBe(embeddings);
  });

  it('does not change the body it was given (a fallback to hosted sends the original)', () => {
    const body = capped({});
    withOutputLimit('inhouse', 'chat.completions', body);
    expect(body).not.toHaveProperty('max_tokens');
  });
});
