import { parseEvaluateRequest } from './evaluate.handler';

describe('parseEvaluateRequest', () => {
  it('accepts {defaultValue, type, context}, with object as another name for json', () => {
    expect(parseEvaluateRequest('{"defaultValue": 1.5, "type": "number", "context": {"targetingKey": "u"}}')).toEqual({
      ok: true,
      request: { defaultValue: 1.5, type: 'number', context: { kind: 'user', key: 'u' } },
    });
    expect(parseEvaluateRequest('{"defaultValue": [], "type": "object", "context": {}}')).toMatchObject({ ok: true, request: { type: 'json' } });
  });

  it("maps the context as OFREP does (OpenFeature's flat context), and names a malformed one's field", () => {
    const multi = '{"defaultValue": false, "type": "boolean", "context": {"kind": "multi", "user": {"targetingKey": "u"}, "organization": {"key": "acme"}}}';
    expect(parseEvaluateRequest(multi)).toMatchObject({ ok: true, request: { context: { kind: 'multi', user: { key: 'u' }, organization: { key: 'acme' } } } });
    expect(parseEvaluateRequest('{"defaultValue": false, "type": "boolean", "context": {"kind": "multi", "organization": {}}}')).toMatchObject({
      ok: false,
      errors: { 'context.organization.targetingKey': expect.any(String) },
    });
  });

  it('tells malformed JSON from a body that does not validate', () => {
    expect(parseEvaluateRequest('{')).toMatchObject({ ok: false, problem: expect.objectContaining({ slug: 'malformed-json' }) });
    expect(parseEvaluateRequest('')).toMatchObject({ ok: false, problem: expect.objectContaining({ slug: 'bad-request' }) });
    expect(parseEvaluateRequest('1')).toMatchObject({ ok: false, problem: expect.objectContaining({ slug: 'bad-request' }), errors: { body: 'must be a JSON object' } });
  });

  it('refuses JSON nested deeper than 64 levels before parsing it', () => {
    const deep = `{"type": "json", "defaultValue": ${'['.repeat(10000)}${']'.repeat(10000)}, "context": {}}`;
    expect(parseEvaluateRequest(deep)).toMatchObject({ ok: false, problem: expect.objectContaining({ slug: 'json-too-deep' }) });
    const atLimit = `{"type": "json", "defaultValue": ${'['.repeat(63)}${']'.repeat(63)}, "context": {}}`;
    expect(parseEvaluateRequest(atLimit)).toMatchObject({ ok: true });
  });

  it('names every field at fault', () => {
    expect(parseEvaluateRequest('{"type": "boolean", "defaultValue": "yes", "context": null, "userId": "u"}')).toEqual({
      ok: false,
      problem: expect.objectContaining({ slug: 'bad-request' }),
      detail: expect.any(String),
      errors: { defaultValue: 'must be a value of type boolean', context: 'must be a JSON object', userId: 'is not an allowed field' },
    });
    expect(parseEvaluateRequest('{"type": "integer", "defaultValue": 1, "context": {}}')).toMatchObject({
      errors: { type: 'must be one of boolean, string, number, json' },
    });
    expect(parseEvaluateRequest('{"type": "json", "defaultValue": "x", "context": {}}')).toMatchObject({
      errors: { defaultValue: 'must be a value of type json' },
    });
  });
});
