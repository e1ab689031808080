import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '@flagship/lean-http';

/** What a valid token says: the key it was minted for (`server`, or a client-side key's id) and when it expires. */
export interface SseGrant {
  keyId: string;
  /** Unix seconds. */
  exp: number;
}

const SERVER = 'server';
/** A client-side key's id as OrepKeys makes it (16 base64url characters). */
const KEY_ID = /^[A-Za-z0-9_-]{16}$/;

/**
 * The token a browser's EventSource carries in the SSE URL (it cannot send headers): good only for
 * this server's change stream (the HMAC covers a fixed purpose and the served tenant and
 * environment), short-lived (an expiry inside it), tied to the key whose request minted it (so a
 * stream ends when that key is rotated out), and stateless: an HMAC-SHA256 keyed by OREP_AUTH_TOKEN,
 * so any replica holding the same token verifies it and nothing is stored. `<exp>.<mac>` for the
 * server token (the form of the tokens minted before client-side keys, still valid across an
 * upgrade), `<exp>.<keyId>.<mac>` for a client-side key.
 *
 * Expiries are rounded up to a step of a quarter of the lifetime, so every answer within a step
 * hands out the same URL: OFREP providers keep their SSE connection while the URL set is
 * unchanged, and would reconnect on every refetch if each answer named a new token. A token is
 * therefore good for between `ttlS` and `ttlS + step` seconds.
 */
export class SseTokens {
  private readonly step: number;
  private readonly cached = new Map<string, { exp: number; token: string }>();

  constructor(
    private readonly secret: string,
    /** What the token is good for: the purpose and the served tenant/environment or file. */
    private readonly scope: string,
    private readonly ttlS: number,
  ) {
    if (secret === '') throw new Error('the SSE token secret must not be empty');
    this.step = Math.max(1, Math.floor(ttlS / 4));
  }

  /** The same string for every call within one step, per key. */
  mint(keyId = SERVER, nowMs = Date.now()): string {
    const now = Math.floor(nowMs / 1000);
    const exp = Math.ceil((now + this.ttlS) / this.step) * this.step;
    const cached = this.cached.get(keyId);
    if (cached?.exp === exp) return cached.token;
    const token = keyId === SERVER ? `${exp}.${this.mac(exp, keyId)}` : `${exp}.${keyId}.${this.mac(exp, keyId)}`;
    // Keys in force are few (OrepKeys bounds them); ids of keys rotated out age out with their step.
    if (this.cached.size > 64) this.cached.clear();
    this.cached.set(keyId, { exp, token });
    return token;
  }

  /** What `token` grants when it was minted here, for this scope, and has not expired. The MAC is compared in constant time. */
  verify(token: string | null | undefined, nowMs = Date.now()): SseGrant | undefined {
    if (typeof token !== 'string' || token.length > 96) return undefined;
    const parts = token.split('.');
    if (parts.length !== 2 && parts.length !== 3) return undefined;
    const [expText, ...rest] = parts as [string, ...string[]];
    const keyId = rest.length === 2 ? rest[0]! : SERVER;
    const mac = rest[rest.length - 1]!;
    if (!/^[0-9]{1,12}$/.test(expText) || (rest.length === 2 && !KEY_ID.test(keyId))) return undefined;
    const exp = Number(expText);
    const now = Math.floor(nowMs / 1000);
    // Expired, or further ahead than any token minted here could be (a forged or foreign expiry).
    if (exp <= now || exp > now + this.ttlS + this.step) return undefined;
    const cached = this.cached.get(keyId);
    const expected = cached?.exp === exp ? cached.token.slice(cached.token.lastIndexOf('.') + 1) : this.mac(exp, keyId);
    return constantTimeEqual(expected, mac) ? { keyId, exp } : undefined;
  }

  private mac(exp: number, keyId: string): string {
    // The server's input is what it was before client-side keys, so its tokens stay valid across the upgrade.
    const input = keyId === SERVER ? `orep-server ofrep sse\n${this.scope}\n${exp}` : `orep-server ofrep sse\n${this.scope}\n${exp}\n${keyId}`;
    return createHmac('sha256', this.secret).update(input).digest('base64url');
  }
}
