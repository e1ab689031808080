import { canonicalJson, isValidIdempotencyKey, requestFingerprint, sha256Hex } from './idempotency-key';

describe('Idempotency-Key helpers', () => {
  it('accepts 1 to 255 printable ASCII characters', () => {
    expect(isValidIdempotencyKey('a')).toBe(true);
    expect(isValidIdempotencyKey('order 42/retry:1 ~!')).toBe(true);
    expect(isValidIdempotencyKey('k'.repeat(255))).toBe(true);
    expect(isValidIdempotencyKey('')).toBe(false);
    expect(isValidIdempotencyKey('k'.repeat(256))).toBe(false);
    expect(isValidIdempotencyKey('tab\there')).toBe(false);
    expect(isValidIdempotencyKey('clé')).toBe(false);
  });

  it('writes canonical JSON: keys sorted at every depth, array order kept', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson([2, 1])).toBe('[2,1]');
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson(undefined)).toBe('');
    expect(canonicalJson('text')).toBe('"text"');
  });

  it('fingerprints method, path with query and body; not key order', () => {
    const base = requestFingerprint('post', '/api/flags?x=1', { key: 'a', on: true });
    expect(base).toBe(`POST /api/flags?x=1 ${sha256Hex('{"key":"a","on":true}')}`);
    expect(requestFingerprint('POST', '/api/flags?x=1', { on: true, key: 'a' })).toBe(base);
    expect(requestFingerprint('PATCH', '/api/flags?x=1', { key: 'a', on: true })).not.toBe(base);
    expect(requestFingerprint('POST', '/api/flags?x=2', { key: 'a', on: true })).not.toBe(base);
    expect(requestFingerprint('POST', '/api/flags?x=1', { key: 'a', on: false })).not.toBe(base);
  });

  it('fingerprints the headers that change meaning (X-Tenant-ID, X-Environment, If-Match), not the others', () => {
    const body = { on: true };
    const plain = requestFingerprint('PATCH', '/api/flags/a', body);
    expect(requestFingerprint('PATCH', '/api/flags/a', body, { 'x-request-id': 'r1', authorization: 'Bearer x' })).toBe(plain);
    const prod = requestFingerprint('PATCH', '/api/flags/a', body, { 'x-environment': 'production' });
    expect(prod).not.toBe(plain);
    expect(requestFingerprint('PATCH', '/api/flags/a', body, { 'x-environment': 'staging' })).not.toBe(prod);
    expect(requestFingerprint('PATCH', '/api/flags/a', body, { 'x-environment': 'production', 'x-request-id': 'r2' })).toBe(prod);
    expect(requestFingerprint('PATCH', '/api/flags/a', body, { 'if-match': '"1.1"' })).not.toBe(plain);
    expect(requestFingerprint('PATCH', '/api/flags/a', body, { 'x-tenant-id': 't1' })).not.toBe(requestFingerprint('PATCH', '/api/flags/a', body, { 'x-tenant-id': 't2' }));
  });
});
