import { parseOfrepRequest } from './ofrep.handler';

describe('parseOfrepRequest', () => {
  it('takes the context, and no body or no context as an empty one', () => {
    expect(parseOfrepRequest('{"context": {"targetingKey": "u", "n": [1]}}')).toEqual({ ok: true, context: { targetingKey: 'u', n: [1] } });
    expect(parseOfrepRequest('')).toEqual({ ok: true, context: {} });
    expect(parseOfrepRequest('{}')).toEqual({ ok: true, context: {} });
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
