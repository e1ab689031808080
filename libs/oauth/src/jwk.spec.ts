import { generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { generateSigningKey, jwkThumbprint, parseSigningKey, publishedJwk, SigningKeyFormatError } from './jwk';

describe('signing key material', () => {
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

  it('reads a PEM PKCS#8 key, a PEM with \\n escapes and a private JWK alike, with one thumbprint kid', () => {
    const fromPem = parseSigningKey(pem, 'OAUTH_SIGNING_KEY');
    const fromEscaped = parseSigningKey(pem.replace(/\n/g, '\\n'), 'OAUTH_SIGNING_KEY');
    const fromJwk = parseSigningKey(JSON.stringify(ec.privateKey.export({ format: 'jwk' })), 'OAUTH_SIGNING_KEY');
    expect(fromPem.kid).toBe(jwkThumbprint(fromPem.publicJwk));
    expect(fromEscaped.kid).toBe(fromPem.kid);
    expect(fromJwk.kid).toBe(fromPem.kid);
    expect(Object.keys(fromPem.publicJwk).sort()).toEqual(['crv', 'kty', 'x', 'y']);
  });

  it('computes the RFC 7638 thumbprint as jose does', async () => {
    const jwk = generateSigningKey().publicJwk;
    expect(jwkThumbprint(jwk)).toBe(await calculateJwkThumbprint(jwk, 'sha256'));
  });

  it('refuses other curves, RSA, public-only and garbage, naming the variable but not the value', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const publicOnly = JSON.stringify(ec.publicKey.export({ format: 'jwk' }));
    for (const bad of [p384, rsa, publicOnly, 'not a key', '{"kty":"EC"']) {
      let caught: unknown;
      try {
        parseSigningKey(bad, 'OAUTH_SIGNING_KEY');
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(SigningKeyFormatError);
      expect((caught as Error).message).toMatch(/^OAUTH_SIGNING_KEY /);
      expect((caught as Error).message).not.toContain(bad.slice(0, 40));
    }
  });

  it('generates keys whose published form holds no private member', () => {
    const key = generateSigningKey();
    expect(key.privateJwk.d).toEqual(expect.any(String));
    const published = publishedJwk(key.kid, { ...key.privateJwk });
    expect(published).toEqual({ kty: 'EC', crv: 'P-256', x: key.publicJwk.x, y: key.publicJwk.y, kid: key.kid, alg: 'ES256', use: 'sig' });
  });
});
