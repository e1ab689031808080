import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { KeyObject } from 'node:crypto';
import { CHANNELS, PUBSUB, type PubSub, SubscribedCache } from '@flagship/redis';
import { publicKeyFromJwk, publishedJwk, type PublicEcJwk } from './jwk';
import { OAUTH_OPTIONS, type ResolvedOAuthOptions } from './oauth.options';
import { SigningKeysRepository } from './signing-keys.repository';

export interface VerificationKey {
  kid: string;
  key: KeyObject;
  jwk: PublicEcJwk;
}

const MAX_KID_LENGTH = 128;

/** The one key of the cache: every published key is held in one value, kid -> key. */
const ALL = 'published';

/**
 * The published public keys, from `signing_keys` (apps share only Postgres and Redis, so no app
 * fetches another's JWKS over HTTP), held in memory as one value of a SubscribedCache. It is read
 * again when the issuer announces a new key (`CHANNELS.signingKeysChanged`: the next token with an
 * unknown kid waits for that load), after the subscriber reconnects and every `keyRefreshIntervalMs`
 * (both in the background, on the next read, dropping retired keys), and when a token names an
 * unknown `kid`, at most once per `keyRefreshCooldownMs`: a flood of made-up kids costs Postgres one
 * query per cooldown. A known key is never kept waiting, and stays usable while Postgres is down.
 */
@Injectable()
export class VerificationKeys implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('VerificationKeys');
  private readonly cache: SubscribedCache<string, Map<string, VerificationKey>>;
  private lastLoadStartedAt = 0;
  /** The load under way, if any. */
  private loading: Promise<Map<string, VerificationKey>> | undefined;
  /** Loads from Postgres so far (read by tests and worth a metric). */
  loads = 0;

  constructor(
    @Inject(OAUTH_OPTIONS) private readonly options: ResolvedOAuthOptions,
    private readonly repository: SigningKeysRepository,
    @Inject(PUBSUB) pubsub: PubSub,
  ) {
    this.cache = new SubscribedCache<string, Map<string, VerificationKey>>(pubsub, {
      name: 'VerificationKeys',
      load: (_all, { previous }) => this.load(previous),
      reconcileMs: options.keyRefreshIntervalMs,
      // Within the cooldown after a failed load, the keys known are served without asking again.
      maxRetryMs: options.keyRefreshCooldownMs,
    }).follow(CHANNELS.signingKeysChanged, (_message, cache) => cache.invalidate(ALL));
  }

  async onModuleInit(): Promise<void> {
    this.cache.start();
    // Start-up fails when the keys cannot be read: no token could be verified.
    await this.cache.get(ALL);
  }

  onApplicationShutdown(): void {
    this.cache.close();
  }

  /** The key of `kid`, reloading once (within the cooldown) when it is not known yet. */
  async get(kid: string): Promise<VerificationKey | undefined> {
    if (kid.length === 0 || kid.length > MAX_KID_LENGTH) return undefined;
    const current = this.cache.peek(ALL);
    if (current === undefined) {
      // Announced as changed (or failing to reload): a known key still verifies; an unknown one
      // waits for the load that may bring it.
      const hit = this.cache.peek(ALL, { stale: true })?.get(kid);
      if (hit) return hit;
      return (await this.cache.get(ALL).catch(() => undefined))?.get(kid);
    }
    const hit = current.get(kid);
    if (hit) return hit;
    const loading = this.loading;
    if (loading !== undefined) {
      // A load under way may bring it (the cache stores its value before this continues).
      await loading.then(
        () => undefined,
        () => undefined,
      );
      return this.cache.peek(ALL, { stale: true })?.get(kid);
    }
    if (Date.now() - this.lastLoadStartedAt < this.options.keyRefreshCooldownMs) return undefined;
    return (await this.refresh().then(() => this.cache.peek(ALL, { stale: true }), () => undefined))?.get(kid);
  }

  /** The JWKS: every published key's public JWK. */
  published(): PublicEcJwk[] {
    return [...(this.cache.peek(ALL, { stale: true })?.values() ?? [])].map((k) => k.jwk);
  }

  /**
   * Reloads, with a load that starts after this call (so it sees a key inserted just before); one
   * load at a time, callers meanwhile share the next. When it fails the keys known stay served.
   */
  async refresh(): Promise<void> {
    this.cache.invalidate(ALL);
    await this.cache.get(ALL);
  }

  private load(previous: Map<string, VerificationKey> | undefined): Promise<Map<string, VerificationKey>> {
    this.lastLoadStartedAt = Date.now();
    this.loads++;
    const loading = this.repository.published().then((rows) => {
      const next = new Map<string, VerificationKey>();
      for (const row of rows) {
        const known = previous?.get(row.kid);
        if (known) {
          next.set(row.kid, known);
          continue;
        }
        try {
          next.set(row.kid, { kid: row.kid, key: publicKeyFromJwk(row.publicJwk), jwk: publishedJwk(row.kid, row.publicJwk) });
        } catch (err) {
          this.logger.error({ err, kid: row.kid }, 'unusable public key in signing_keys');
        }
      }
      return next;
    });
    this.loading = loading;
    const clear = () => {
      if (this.loading === loading) this.loading = undefined;
    };
    loading.then(clear, clear);
    return loading;
  }
}
