import { ApiTokenVerifier, constantTimeEqual } from './api-token';

describe('ApiTokenVerifier', () => {
  const verifier = new ApiTokenVerifier('s3cret-tökén');

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
    expect(verifier.matches(guess)).toBe(false);
    expect(verifier.check({ authorization: `Bearer ${guess}` })).not.toBe('ok');
  });

  it('keeps working after refusals', () => {
    expect(verifier.matches('s3cret-tökénXXXXXXXX')).toBe(false);
    expect(verifier.matches('s3cret-tökén')).toBe(true);
  });

  it('refuses a guess that repeats the token (reads wrap around the guess, never past it)', () => {
    expect(constantTimeEqual('abab', 'ab')).toBe(false);
    expect(constantTimeEqual('aaaa', 'a')).toBe(false);
    expect(constantTimeEqual('abc', 'abcabc')).toBe(false);
    expect(constantTimeEqual('abc', '')).toBe(false);
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
  });

  it('refuses to be built without a token', () => {
    expect(() => new ApiTokenVerifier('')).toThrow(/empty/);
  });
});
