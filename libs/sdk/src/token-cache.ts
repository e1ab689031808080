/** An access token and when it stops being accepted. */
export interface CachedToken {
  value: string;
  expiresAtMs: number;
}

export interface TokenCacheOptions {
  /** Refresh this long before expiry, so a token never expires between our check and the server's. */
  refreshBeforeMs?: number;
  now?: () => number;
}

/**
 * Holds one access token: hands out the cached one while it is fresh, fetches a new one shortly
 * before it expires, and lets every concurrent caller share a single in-flight fetch (a burst of N
 * calls on a cold client must not ask the token endpoint N times, which is rate limited per address).
 */
export class TokenCache {
  private current: HeldToken | undefined;
  private inFlight: Promise<HeldToken> | undefined;
  private readonly refreshBeforeMs: number;
  private readonly now: () => number;

  constructor(
    private readonly fetchToken: () => Promise<CachedToken>,
    options: TokenCacheOptions = {},
  ) {
    this.refreshBeforeMs = options.refreshBeforeMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  async get(): Promise<string> {
    const current = this.current;
    if (current && this.isFresh(current)) return current.value;
    return (await this.fetchShared()).value;
  }

  /**
   * The server refused `used` (401 invalid_token: revoked, or the signing key rotated). Drops it, but
   * only if it is still the cached one: when N calls fail with the same token, one refresh serves all.
   */
  invalidate(used: string): void {
    if (this.current?.value === used) this.current = undefined;
  }

  private isFresh(token: HeldToken): boolean {
    // A token shorter-lived than twice the margin is refreshed at half its life instead, else it
    // would count as stale the moment it arrives.
    const lifetimeLeft = token.expiresAtMs - this.now();
    return lifetimeLeft > Math.min(this.refreshBeforeMs, (token.expiresAtMs - token.issuedAtMs) / 2);
  }

  private fetchShared(): Promise<HeldToken> {
    if (!this.inFlight) {
      const issuedAtMs = this.now();
      this.inFlight = this.fetchToken()
        .then((token) => {
          const held: HeldToken = { ...token, issuedAtMs };
          this.current = held;
          return held;
        })
        .finally(() => {
          this.inFlight = undefined;
        });
    }
    return this.inFlight;
  }
}

/** Issue time kept to know the token's lifetime. */
interface HeldToken extends CachedToken {
  issuedAtMs: number;
}
