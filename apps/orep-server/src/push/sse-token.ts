import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '@flagship/lean-http';

/**
 * The token a browser's EventSource carries in the SSE URL (it cannot send headers): good only for
 * this server's change stream (the HMAC covers a fixed purpose and the served tenant and
 * environment), short-lived (an expiry inside it), and stateless: an HMAC-SHA256 of the expiry
 * keyed by OREP_AUTH_TOKEN, so any replica holding the same token verifies it and nothing is stored.
 *
 * Expiries are rounded up to a step of a quarter of the lifetime, so every answer within a step
 * hands out the same URL: OFREP providers keep their SSE connection while the URL set is
 * unchanged, and would reconnect on every refetch if each answer named a new token. A token is
 * therefore good for between `ttlS` and `ttlS + step` seconds.
 */
export class SseTokens {
  private readonly step: number;
  private cached: { exp: number; token: string } | undefined;

  constructor(
    private readonly secret: string,
    /** What the token is good for: the purpose and the served tenant/environment or file. */
    private readonly scope: string,
    private readonly ttlS: number,
  ) {
    if (secret === '') throw new Error('the SSE token secret must not be empty');
    this.step = Math.max(1, Math.floor(ttlS / 4));
  }

  /** `<expiry, unix seconds>.<base64url HMAC>`; the same string for every call within one step. */
  mint(nowMs = Date.now()): string {
    const now = Math.floor(nowMs / 1000);
    const exp = Math.ceil((now + this.ttlS) / this.step) * this.step;
    if (this.cached?.exp !== exp) this.cached = { exp, token: `${exp}.${this.mac(exp)}` };
    return this.cached.token;
  }

  /** Whether `token` was minted here, for this scope, and has not expired. The MAC is compared in constant time. */
  verify(token: string | null | undefined, nowMs = Date.now()): boolean {
    if (typeof token !== 'string' || token.length > 64) return false;
    const dot = token.indexOf('.');
    if (dot <= 0 || dot > 12) return false;
    const expText = token.slice(0, dot);
    if (!/^[0-9]+$/.test(expText)) return false;
    const exp = Number(expText);
    const now = Math.floor(nowMs / 1000);
    // Expired, or further ahead than any token minted here could be (a forged or foreign expiry).
    if (exp <= now || exp > now + this.ttlS + this.step) return false;
    const expected = this.cached?.exp === exp ? this.cached.token.slice(dot + 1) : this.mac(exp);
    return constantTimeEqual(expected, token.slice(dot + 1));
  }

  private mac(exp: number): string {
    return createHmac('sha256', this.secret).update(`orep-server ofrep sse\n${this.scope}\n${exp}`).digest('base64url');
  }
}
