import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ConfigError } from '@flagship/config';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { generateSigningKey, parseSigningKey, privateKeyFromJwk, SigningKeyFormatError, type SigningKeyMaterial } from './jwk';
import { OAUTH_OPTIONS, type ResolvedOAuthOptions } from './oauth.options';
import { SigningKeysRepository } from './signing-keys.repository';
import { VerificationKeys } from './verification-keys';

const MISSING = '\u0000missing';

export interface ActiveSigningKey extends SigningKeyMaterial {
  /** True when the key comes from the secret; false when generated and kept in the database. */
  configured: boolean;
  /** The secret's value it was read from (undefined for a generated key), to notice a rotation. */
  source: string | undefined;
  /** The end of its publication lease in `signing_keys` as of its last renewal (Postgres' clock). */
  leaseEndsAt: Date;
}

/** What management-api's gauges export (oauth_signing_key_*): the lease that keeps the key verifiable, and a refused rotation. */
export interface SigningKeyStatus {
  /** When the signing key's lease runs out unless renewed (renewed every keyRenewIntervalSeconds); undefined before the first key. */
  leaseEndsAt: Date | undefined;
  /** The secret's current value was refused (unparsable) or is gone, and the previous key still signs. */
  secretRefused: boolean;
}

/**
 * The key access tokens are signed with. With `OAUTH_SIGNING_KEY` configured, that key (its public
 * half upserted into `signing_keys`, private_jwk NULL); the secret is re-read on every token (a map
 * lookup in SecretStore), so after a Secrets Manager rotation the new key signs at once while the
 * old one stays published until its lease, which outlasts the tokens it signed, runs out.
 * Without it (development), one generated key shared by every process through `signing_keys`.
 */
@Injectable()
export class SigningKeyService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('SigningKeyService');
  private active: ActiveSigningKey | undefined;
  private pending: { source: string | undefined; promise: Promise<ActiveSigningKey> } | undefined;
  /** A secret value that failed to parse (or MISSING): not retried on every token, the previous key keeps signing. */
  private refusedSource: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unlisten: (() => unknown) | undefined;

  constructor(
    @Inject(OAUTH_OPTIONS) private readonly options: ResolvedOAuthOptions,
    private readonly repository: SigningKeysRepository,
    private readonly verificationKeys: VerificationKeys,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {}

  get enabled(): boolean {
    return this.options.issuing !== undefined;
  }

  /** Publishes the key before the first token, and keeps its lease and the secret fresh. */
  async onModuleInit(): Promise<void> {
    const issuing = this.options.issuing;
    if (!issuing) return;
    if (issuing.requireConfiguredKey && this.readSecret() === undefined) {
      throw new ConfigError(`invalid configuration: ${issuing.secretName} is required (an EC P-256 private key, PEM PKCS#8 or JWK, from the environment or Secrets Manager); a key generated and kept in Postgres is for development only`);
    }
    try {
      await this.current();
    } catch (err) {
      if (err instanceof SigningKeyFormatError) throw new ConfigError(`invalid configuration: ${err.message}`);
      throw err;
    }
    this.timer = setInterval(() => void this.renew(), issuing.keyRenewIntervalSeconds * 1000);
    this.timer.unref();
    this.unlisten = issuing.secrets?.onChange?.((names) => {
      if (names.includes(issuing.secretName)) void this.renew();
    });
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
    this.unlisten?.();
  }

  /** The key to sign with now. */
  async current(): Promise<ActiveSigningKey> {
    if (!this.options.issuing) throw new Error('this app does not issue access tokens (OAuthModule without `issuing`)');
    const source = this.readSecret();
    if (this.active && (this.active.source === source || (source !== undefined && source === this.refusedSource))) return this.active;
    if (source === undefined && this.active && this.options.issuing.requireConfiguredKey) {
      // The secret vanished (a Secrets Manager mishap): never fall back to a generated key here.
      if (this.refusedSource !== MISSING) this.logger.error(`${this.options.issuing.secretName} is gone; still signing with the last configured key`);
      this.refusedSource = MISSING;
      return this.active;
    }
    return this.activate(source);
  }

  status(): SigningKeyStatus {
    return { leaseEndsAt: this.active?.leaseEndsAt, secretRefused: this.refusedSource !== undefined };
  }

  private readSecret(): string | undefined {
    const issuing = this.options.issuing;
    const value = issuing?.secrets?.get(issuing.secretName);
    return value === undefined || value.trim() === '' ? undefined : value;
  }

  private activate(source: string | undefined): Promise<ActiveSigningKey> {
    if (this.pending && this.pending.source === source) return this.pending.promise;
    const promise = this.load(source)
      .then(async (key) => {
        // This process's verifier learns the key before any token signed with it exists (callers
        // arriving meanwhile wait on this promise); the other apps hear of it through Redis (or at
        // their next unknown kid or periodic reload).
        await this.verificationKeys.refresh().catch(() => undefined);
        await this.pubsub.publish(CHANNELS.signingKeysChanged, { kid: key.kid }).catch(() => undefined);
        this.active = key;
        this.refusedSource = undefined;
        this.logger.log({ kid: key.kid, configured: key.configured }, 'signing access tokens with key');
        return key;
      })
      .catch((err: unknown) => {
        if (err instanceof SigningKeyFormatError && this.active) {
          this.refusedSource = source;
          this.logger.error({ reason: err.message }, 'the rotated signing key is unusable; still signing with the previous one');
          return this.active;
        }
        throw err;
      })
      .finally(() => {
        if (this.pending?.promise === promise) this.pending = undefined;
      });
    this.pending = { source, promise };
    return promise;
  }

  private async load(source: string | undefined): Promise<ActiveSigningKey> {
    const lease = this.options.keyLeaseSeconds;
    if (source !== undefined) {
      const key = parseSigningKey(source, this.options.issuing?.secretName ?? 'OAUTH_SIGNING_KEY');
      const leaseEndsAt = await this.repository.upsertConfigured({ kid: key.kid, publicJwk: key.publicJwk }, lease);
      return { ...key, configured: true, source, leaseEndsAt };
    }
    const row = await this.repository.activeGeneratedOrCreate(generateSigningKey, lease);
    return { kid: row.kid, privateKey: privateKeyFromJwk(row.privateJwk), publicJwk: row.publicJwk, configured: false, source: undefined, leaseEndsAt: row.leaseEndsAt };
  }

  /** Re-reads the secret (a rotation activates the new key) and renews the active key's lease. */
  async renew(): Promise<void> {
    try {
      const key = await this.current();
      const lease = this.options.keyLeaseSeconds;
      if (key.configured) {
        key.leaseEndsAt = await this.repository.upsertConfigured({ kid: key.kid, publicJwk: key.publicJwk }, lease);
        return;
      }
      const leaseEndsAt = await this.repository.renewGenerated(key.kid, lease);
      if (leaseEndsAt !== undefined) key.leaseEndsAt = leaseEndsAt;
      else {
        // Someone retired the generated key: stop signing with it.
        if (this.active === key) this.active = undefined;
        await this.current();
      }
    } catch (err) {
      this.logger.error({ err }, 'cannot renew the signing key');
    }
  }
}
