import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { CHANNELS, PUBSUB, REDIS, REDIS_KEYS, type PubSub, type RedisKeys } from '@flagship/redis';
import { OAUTH_OPTIONS, type ResolvedOAuthOptions } from './oauth.options';
import { RevokedClientsRepository } from './revoked-clients.repository';

/** What management-api needs to revoke a client; an interface so its service tests can use a fake. */
export interface RevocationRecorder {
  /** Records the revocation for every app; rejects with RevocationUnavailableError when it could not be recorded. */
  revoke(clientId: string, revokedAtMs?: number): Promise<void>;
}
export const REVOCATION_RECORDER = Symbol('REVOCATION_RECORDER');

/** The revocation could not be recorded (Redis unreachable): the caller must not report success. */
export class RevocationUnavailableError extends Error {
  override readonly name = 'RevocationUnavailableError';
}

/**
 * Revoked OAuth clients (CONTRACT.md section 3: a deleted client's tokens are refused within 5 s in
 * every app). The record is a sorted set in Redis, client id -> revocation time (ms), trimmed of
 * entries older than a token's lifetime, announced on `CHANNELS.clientRevoked`.
 *
 * Every verifier keeps a local Map, so checking a token costs no round trip. The Map is fed by
 * pub/sub (instant), by reading the sorted set every `revocationPollMs` (heals a missed message or a
 * dropped subscriber connection) and by sweeping `oauth_clients.deleted_at` every
 * `revocationDbSweepMs` and at start-up (heals a Redis that restarted without its data). management-api
 * records the revocation in Redis *before* it marks the client deleted, and answers 503 when Redis is
 * down, so no deletion succeeds unless every app will learn of it.
 */
@Injectable()
export class ClientRevocations implements RevocationRecorder, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ClientRevocations');
  private readonly revoked = new Map<string, number>();
  private readonly timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(
    @Inject(OAUTH_OPTIONS) private readonly options: ResolvedOAuthOptions,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_KEYS) private readonly keys: RedisKeys,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
    private readonly repository: RevokedClientsRepository,
  ) {}

  private get setKey(): string {
    return this.keys.key('oauth', 'revoked-clients');
  }

  async onModuleInit(): Promise<void> {
    this.pubsub
      .subscribe(CHANNELS.clientRevoked, (message) => this.onMessage(message))
      .then((unsubscribe) => {
        if (this.closed) void unsubscribe().catch(() => undefined);
        else this.unsubscribe = unsubscribe;
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'cannot subscribe to client revocations'));
    await Promise.all([this.poll().catch(() => undefined), this.sweep().catch(() => undefined)]);
    this.every(this.options.revocationPollMs, () => this.poll());
    this.every(this.options.revocationDbSweepMs, () => this.sweep());
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.unsubscribe?.().catch(() => undefined);
  }

  /** True when the client was revoked at or after the token's `iat` (seconds). No I/O. */
  isRevoked(clientId: string, issuedAtSeconds: number): boolean {
    const at = this.revoked.get(clientId);
    return at !== undefined && issuedAtSeconds * 1000 <= at;
  }

  async revoke(clientId: string, revokedAtMs: number = Date.now()): Promise<void> {
    const key = this.setKey;
    const retention = this.options.revocationRetentionMs;
    let results: Array<[Error | null, unknown]> | null;
    try {
      results = await this.redis
        .multi()
        .zadd(key, revokedAtMs, clientId)
        .zremrangebyscore(key, '-inf', revokedAtMs - retention)
        .pexpire(key, retention)
        .exec();
    } catch (err) {
      throw new RevocationUnavailableError(`cannot record the revocation in Redis: ${(err as Error).message}`);
    }
    const failed = results === null ? new Error('transaction aborted') : results.find(([e]) => e !== null)?.[0];
    if (failed) throw new RevocationUnavailableError(`cannot record the revocation in Redis: ${failed.message}`);
    this.note(clientId, revokedAtMs);
    // Recorded: a lost announcement only delays other apps until their next poll.
    await this.pubsub.publish(CHANNELS.clientRevoked, { clientId, revokedAt: revokedAtMs }).catch((err: unknown) => {
      this.logger.warn({ err, clientId }, 'revocation recorded but not announced; verifiers will read it at their next poll');
    });
  }

  /** Reads the sorted set (every `revocationPollMs`). */
  async poll(): Promise<void> {
    const now = Date.now();
    const flat = await this.redis.zrangebyscore(this.setKey, now - this.options.revocationRetentionMs, '+inf', 'WITHSCORES');
    for (let i = 0; i + 1 < flat.length; i += 2) this.note(flat[i], Number(flat[i + 1]));
    this.prune(now);
  }

  /** Reads `oauth_clients.deleted_at` (every `revocationDbSweepMs`). */
  async sweep(): Promise<void> {
    const rows = await this.repository.deletedWithin(Math.ceil(this.options.revocationRetentionMs / 1000));
    for (const r of rows) this.note(r.clientId, r.deletedAt.getTime());
  }

  private onMessage(message: unknown): void {
    if (typeof message !== 'object' || message === null) return;
    const { clientId, revokedAt } = message as { clientId?: unknown; revokedAt?: unknown };
    if (typeof clientId !== 'string' || clientId === '') return;
    // Without a time, the moment we heard of it: refuses every token issued until now.
    this.note(clientId, typeof revokedAt === 'number' && Number.isFinite(revokedAt) ? revokedAt : Date.now());
  }

  private note(clientId: string, at: number): void {
    const known = this.revoked.get(clientId);
    if (known === undefined || at > known) this.revoked.set(clientId, at);
  }

  private prune(now: number): void {
    const oldest = now - this.options.revocationRetentionMs;
    for (const [clientId, at] of this.revoked) if (at < oldest) this.revoked.delete(clientId);
  }

  private every(ms: number, work: () => Promise<void>): void {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      work()
        .catch((err: unknown) => this.logger.debug?.({ err }, 'revocation refresh failed; retrying'))
        .finally(() => {
          running = false;
        });
    }, ms);
    timer.unref();
    this.timers.push(timer);
  }
}
