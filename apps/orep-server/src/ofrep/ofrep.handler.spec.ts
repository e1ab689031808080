import { parseOfrepRequest } from './ofrep.handler';

describe('parseOfrepRequest', () => {
  it('maps the flat context onto a user context, and no body or no context is one without a key', () => {
    expect(parseOfrepRequest('{"context": {"targetingKey": "u", "n": [1]}}')).toEqual({ ok: true, context: { kind: 'user', key: 'u', n: [1] }, keyMissing: false });
    expect(parseOfrepRequest('')).toEqual({ ok: true, context: { kind: 'user' }, keyMissing: true });
    expect(parseOfrepRequest('{}')).toEqual({ ok: true, context: { kind: 'user' }, keyMissing: true });
  });

  it('maps kind to the kind, and kind multi to a multi-kind context of its nested objects (their targetingKey or key)', () => {
    expect(parseOfrepRequest('{"context": {"targetingKey": "acme", "kind": "organization", "plan": "pro"}}')).toEqual({
      ok: true,
      context: { kind: 'organization', key: 'acme', plan: 'pro' },
      keyMissing: false,
    });
    const multi = '{"context": {"kind": "multi", "user": {"targetingKey": "u-1", "country": "NO"}, "organization": {"key": "acme"}, "dropped": 1}}';
    expect(parseOfrepRequest(multi)).toEqual({
      ok: true,
      context: { kind: 'multi', user: { kind: 'user', key: 'u-1', country: 'NO' }, organization: { kind: 'organization', key: 'acme' } },
      keyMissing: false,
    });
  });

  it.each([
    ['{"context": {"kind": "multi", "user": {"targetingKey": "u"}, "organization": {"plan": "pro"}}}', 'context.organization.targetingKey'],
    ['{"context": {"kind": "multi", "multi": {"targetingKey": "u"}}}', 'context.multi'],
    ['{"context": {"kind": "multi"}}', 'context'],
    ['{"context": {"targetingKey": "u", "kind": "no spaces"}}', 'context.kind'],
    ['{"context": {"targetingKey": "u", "kind": 3}}', 'context.kind'],
  ])('%s is INVALID_CONTEXT naming %s', (text, field) => {
    const parsed = parseOfrepRequest(text);
    expect(parsed).toMatchObject({ ok: false, errorCode: 'INVALID_CONTEXT' });
    expect(!parsed.ok && parsed.details.startsWith(`${field} `)).toBe(true);
  });

  it.each([
    ['{', 'PARSE_ERROR'],
    ['"text"', 'PARSE_ERROR'],
    ['null', 'PARSE_ERROR'],
    ['[{"context": {}}]', 'PARSE_ERROR'],
    ['{"context": 1}', 'INVALID_CONTEXT'],
    ['{"context": [1]}', 'INVALID_CONTEXT'],
    ['{"context": {"targetingKey": {"id": 1}}}', 'INVALID_CONTEXT'],
  ])('%s -> %s', (text, errorCode) => {
    expect(parseOfrepRequest(text)).toMatchObject({ ok: false, errorCode });
  });
});
