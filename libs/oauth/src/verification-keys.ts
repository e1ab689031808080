import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { KeyObject } from 'node:crypto';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { publicKeyFromJwk, publishedJwk, type PublicEcJwk } from './jwk';
import { OAUTH_OPTIONS, type ResolvedOAuthOptions } from './oauth.options';
import { SigningKeysRepository } from './signing-keys.repository';

export interface VerificationKey {
  kid: string;
  key: KeyObject;
  jwk: PublicEcJwk;
}

const MAX_KID_LENGTH = 128;

/**
 * The published public keys, from `signing_keys` (apps share only Postgres and Redis, so no app
 * fetches another's JWKS over HTTP), held in memory. Reloaded every `keyRefreshIntervalMs`, when the
 * issuer announces a new key, and when a token names an unknown `kid`, at most once per
 * `keyRefreshCooldownMs`: a flood of made-up kids costs Postgres one query per cooldown.
 */
@Injectable()
export class VerificationKeys implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('VerificationKeys');
  private keys = new Map<string, VerificationKey>();
  private lastLoadStartedAt = 0;
  private loading: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private closed = false;
  /** Loads from Postgres so far (read by tests and worth a metric). */
  loads = 0;

  constructor(
    @Inject(OAUTH_OPTIONS) private readonly options: ResolvedOAuthOptions,
    private readonly repository: SigningKeysRepository,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refreshQuietly(), this.options.keyRefreshIntervalMs);
    this.timer.unref();
    // Not awaited: a subscription waits for Redis, and start-up must not.
    this.pubsub
      .subscribe(CHANNELS.signingKeysChanged, () => void this.refreshQuietly())
      .then((unsubscribe) => {
        if (this.closed) void unsubscribe().catch(() => undefined);
        else this.unsubscribe = unsubscribe;
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'cannot subscribe to signing key changes'));
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.unsubscribe?.().catch(() => undefined);
  }

  /** The key of `kid`, reloading once (within the cooldown) when it is not known yet. */
  async get(kid: string): Promise<VerificationKey | undefined> {
    if (kid.length === 0 || kid.length > MAX_KID_LENGTH) return undefined;
    const hit = this.keys.get(kid);
    if (hit) return hit;
    if (this.loading) {
      await this.loading.catch(() => undefined);
      return this.keys.get(kid);
    }
    if (Date.now() - this.lastLoadStartedAt < this.options.keyRefreshCooldownMs) return undefined;
    await this.refreshQuietly();
    return this.keys.get(kid);
  }

  /** The JWKS: every published key's public JWK. */
  published(): PublicEcJwk[] {
    return [...this.keys.values()].map((k) => k.jwk);
  }

  /**
   * Reloads, with a load that starts after this call (so it sees a key inserted just before).
   * One load at a time: while one runs, callers share a single follow-up load.
   */
  refresh(): Promise<void> {
    if (!this.loading) return this.load();
    this.queued ??= this.loading
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.load();
      });
    return this.queued;
  }

  private load(): Promise<void> {
    this.lastLoadStartedAt = Date.now();
    this.loads++;
    const loading = this.repository
      .published()
      .then((rows) => {
        const next = new Map<string, VerificationKey>();
        for (const row of rows) {
          const known = this.keys.get(row.kid);
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
        this.keys = next;
      })
      .finally(() => {
        if (this.loading === loading) this.loading = undefined;
      });
    this.loading = loading;
    return loading;
  }

  private async refreshQuietly(): Promise<void> {
    try {
      await this.refresh();
    } catch (err) {
      this.logger.warn({ err }, 'cannot reload signing keys; keeping the ones known');
    }
  }
}
