import { ApiKeys, constantTimeEqual } from './api-token';

describe('ApiKeys', () => {
  const verifier = new ApiKeys([['s3cret-tökén', 'ok' as const]]);

  it('accepts the token as a bearer token (any case of the scheme) or as X-API-Key', () => {
    expect(verifier.check({ authorization: 'Bearer s3cret-tökén' })).toBe('ok');
    expect(verifier.check({ authorization: 'bearer   s3cret-tökén ' })).toBe('ok');
    expect(verifier.check({ 'x-api-key': 's3cret-tökén' })).toBe('ok');
    // A non-bearer Authorization does not hide a valid API key.
    expect(verifier.check({ authorization: 'Basic abc', 'x-api-key': 's3cret-tökén' })).toBe('ok');
  });

  it('tells a missing token from a wrong one', () => {
    expect(verifier.check({})).toBe('missing');
    expect(verifier.check({ authorization: 'Bearer ' })).toBe('missing');
    expect(verifier.check({ authorization: 'Basic s3cret-tökén' })).toBe('missing');
    expect(verifier.check({ 'x-api-key': '' })).toBe('missing');
  });

  it.each([
    ['a prefix', 's3cret'],
    ['a longer string starting with it', 's3cret-tökénX'],
    ['the same length, one character off', 's3cret-tökén'.replace('s', 'S')],
    ['the same bytes cut at a character boundary', 's3cret-tök'],
    ['an empty-looking padding trick', 's3cret-tökén\u0000'],
  ])('refuses %s', (_name, guess) => {
    expect(verifier.match(guess)).toBeUndefined();
    expect(verifier.check({ authorization: `Bearer ${guess}` })).toBe('invalid');
  });

  it('keeps working after refusals', () => {
    expect(verifier.match('s3cret-tökénXXXXXXXX')).toBeUndefined();
    expect(verifier.match('s3cret-tökén')).toBe('ok');
  });

  it('refuses a guess that repeats the token (reads wrap around the guess, never past it)', () => {
    expect(constantTimeEqual('abab', 'ab')).toBe(false);
    expect(constantTimeEqual('aaaa', 'a')).toBe(false);
    expect(constantTimeEqual('abc', 'abcabc')).toBe(false);
    expect(constantTimeEqual('abc', '')).toBe(false);
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
  });

  it('tells which of several keys was presented, whichever comes first', () => {
    const keys = new ApiKeys([
      ['server-secret-0001', 'server'],
      ['browser-key-000001', 'browser'],
      ['browser-key-000002', 'browser-2'],
    ]);
    expect(keys.check({ 'x-api-key': 'browser-key-000002' })).toBe('browser-2');
    expect(keys.check({ authorization: 'Bearer server-secret-0001' })).toBe('server');
    expect(keys.check({ authorization: 'Bearer browser-key-00000' })).toBe('invalid');
  });

  it('refuses to be built without a key, or with an empty one', () => {
    expect(() => new ApiKeys([])).toThrow(/at least one/);
    expect(() => new ApiKeys([['', 'ok']])).toThrow(/empty/);
  });
});
