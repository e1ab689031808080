import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';

/** The public half of an ES256 key as published in the JWKS. */
export interface PublicEcJwk {
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  kid?: string;
  alg?: 'ES256';
  use?: 'sig';
}

export interface PrivateEcJwk extends PublicEcJwk {
  d: string;
}

export interface SigningKeyMaterial {
  kid: string;
  privateKey: KeyObject;
  publicJwk: PublicEcJwk;
}

/** The signing key secret does not hold a usable key. Names the variable, never its value. */
export class SigningKeyFormatError extends Error {
  override readonly name = 'SigningKeyFormatError';
}

/** RFC 7638 thumbprint: the same key gives the same `kid` in every process, with no coordination. */
export function jwkThumbprint(jwk: Pick<PublicEcJwk, 'crv' | 'kty' | 'x' | 'y'>): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}

function publicJwkOf(key: KeyObject): PublicEcJwk {
  const jwk = createPublicKey(key).export({ format: 'jwk' }) as JsonWebKey;
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.x !== 'string' || typeof jwk.y !== 'string') {
    throw new SigningKeyFormatError('not an EC P-256 key');
  }
  return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
}

/**
 * Reads a configured ES256 private key: PEM (PKCS#8, or SEC1 `EC PRIVATE KEY`; `\n` escapes as
 * environment variables often carry them are accepted) or a private JWK in JSON.
 */
export function parseSigningKey(raw: string, secretName: string): SigningKeyMaterial {
  const text = raw.trim();
  let privateKey: KeyObject;
  try {
    if (text.startsWith('{')) {
      const jwk = JSON.parse(text) as JsonWebKey;
      if (typeof jwk.d !== 'string') throw new Error('no private part');
      privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
    } else {
      privateKey = createPrivateKey({ key: text.includes('\\n') ? text.replace(/\\n/g, '\n') : text, format: 'pem' });
    }
  } catch {
    throw new SigningKeyFormatError(`${secretName} is not a private key in PEM (PKCS#8) or JWK form`);
  }
  if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw new SigningKeyFormatError(`${secretName} must be an EC P-256 key (ES256)`);
  }
  const publicJwk = publicJwkOf(privateKey);
  return { kid: jwkThumbprint(publicJwk), privateKey, publicJwk };
}

/** A new ES256 key pair, for development when no key is configured. */
export function generateSigningKey(): { kid: string; publicJwk: PublicEcJwk; privateJwk: PrivateEcJwk } {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicJwk = publicJwkOf(privateKey);
  const d = (privateKey.export({ format: 'jwk' }) as JsonWebKey).d as string;
  return { kid: jwkThumbprint(publicJwk), publicJwk, privateJwk: { ...publicJwk, d } };
}

export function privateKeyFromJwk(jwk: PrivateEcJwk): KeyObject {
  return createPrivateKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d }, format: 'jwk' });
}

export function publicKeyFromJwk(jwk: PublicEcJwk): KeyObject {
  return createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, format: 'jwk' });
}

/** The JWKS entry of a key: only public members, with its kid and algorithm. */
export function publishedJwk(kid: string, jwk: PublicEcJwk): PublicEcJwk {
  return { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, kid, alg: 'ES256', use: 'sig' };
}
