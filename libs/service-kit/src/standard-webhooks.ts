import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * Outbound webhooks as the Standard Webhooks specification has them (standardwebhooks.com), so a
 * receiver verifies with its `standardwebhooks` or `svix` library: a `whsec_` secret of random
 * bytes in base64, and `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under the decoded secret.
 */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and 32 random bytes in base64 (the specification asks 24 to 64). */
export function newWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The `webhook-signature` header value for one message. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/**
 * Signing needs the secret itself, so it is kept sealed (AES-256-GCM under an operator key,
 * WEBHOOK_SECRETS_KEY) rather than hashed like OAuth client secrets: a copy of the database alone
 * signs nothing. Sealed form: `v1.<iv>.<tag>.<ciphertext>`, each base64url.
 */
export class WebhookSecretBox {
  private readonly key: Buffer;

  /** `keyBase64`: 32 bytes in base64. */
  constructor(keyBase64: string) {
    this.key = Buffer.from(keyBase64, 'base64');
    if (this.key.length !== 32) throw new Error('WEBHOOK_SECRETS_KEY must be 32 bytes in base64');
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  /** The secret; throws when sealed under another key or altered (GCM's tag). */
  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || iv === undefined || tag === undefined || data === undefined) throw new Error('not a sealed webhook secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}
