import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { CHANNELS, PUBSUB, REDIS, REDIS_KEYS, type PubSub, type RedisKeys, SubscribedCache, whenReady } from '@flagship/redis';
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

/** What a verifier holds of the revocation record: client id -> revocation time (ms). */
interface RevokedClients {
  byClient: Map<string, number>;
  /** When `oauth_clients` was last swept (or tried), ms. */
  sweptAt: number;
}

/** How long start-up waits for the Redis connection before reading without it (createRedis' connectTimeout). */
const START_UP_REDIS_WAIT_MS = 2000;

/** The one key of the cache: every revocation is held in one value. */
const ALL = 'revoked-clients';

/**
 * Revoked OAuth clients (CONTRACT.md section 3: a deleted client's tokens are refused within 5 s in
 * every app). The record is a sorted set in Redis, client id -> revocation time (ms), trimmed of
 * entries older than a token's lifetime, announced on `CHANNELS.clientRevoked`.
 *
 * Every verifier holds the record in memory (one value of a SubscribedCache), so checking a token
 * costs no round trip. An announcement is applied to it at once (it carries the revocation); the
 * cache reloads it eagerly every `revocationPollMs` and whenever the subscriber reconnects: a load
 * reads the sorted set (heals a missed message) and, every `revocationDbSweepMs` and at start-up,
 * `oauth_clients.deleted_at` (heals a Redis that restarted without its data). A load adds to what is
 * held and never forgets a revocation before its retention ends; a failed read of the set is retried
 * with a capped backoff, a failed sweep at its next due time. management-api records the revocation in Redis *before* it
 * marks the client deleted, and answers 503 when Redis is down, so no deletion succeeds unless every
 * app will learn of it.
 */
@Injectable()
export class ClientRevocations implements RevocationRecorder, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('ClientRevocations');
  private readonly cache: SubscribedCache<string, RevokedClients>;

  constructor(
    @Inject(OAUTH_OPTIONS) private readonly options: ResolvedOAuthOptions,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_KEYS) private readonly keys: RedisKeys,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
    private readonly repository: RevokedClientsRepository,
  ) {
    this.cache = new SubscribedCache<string, RevokedClients>(pubsub, {
      name: 'ClientRevocations',
      load: (_all, { previous }) => this.load(previous),
      eager: true,
      // The reconcile timer ticks every reconcileMs and reloads values at least that old: half the
      // poll period reads the set at least every revocationPollMs.
      reconcileMs: Math.max(10, options.revocationPollMs / 2),
      maxRetryMs: options.revocationPollMs,
    }).follow(CHANNELS.clientRevoked, (message, cache) =>
      // Without a time, the moment we heard of it: refuses every token issued until now.
      cache.update(ALL, (held) => note(held, message.clientId, message.revokedAt ?? Date.now())),
    );
  }

  private get setKey(): string {
    return this.keys.key('oauth', 'revoked-clients');
  }

  async onModuleInit(): Promise<void> {
    // The apps start while their Redis connection is still being made: the first read of the set
    // waits for it (as long as a connection attempt may take), so the revocations are held from the
    // first request on rather than from the first retry. A Redis that is down is not waited for longer.
    await whenReady(this.redis, START_UP_REDIS_WAIT_MS);
    this.cache.start();
    // Never fails: with Redis and Postgres down it holds nothing yet, and the next loads fill it.
    await this.cache.get(ALL);
  }

  onApplicationShutdown(): void {
    this.cache.close();
  }

  /** True when the client was revoked at or after the token's `iat` (seconds). No I/O. */
  isRevoked(clientId: string, issuedAtSeconds: number): boolean {
    const at = this.cache.peek(ALL, { stale: true })?.byClient.get(clientId);
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
    this.cache.update(ALL, (held) => note(held, clientId, revokedAtMs));
    // Recorded: a lost announcement only delays other apps until their next poll.
    await this.pubsub.publish(CHANNELS.clientRevoked, { clientId, revokedAt: revokedAtMs }).catch((err: unknown) => {
      this.logger.warn({ err, clientId }, 'revocation recorded but not announced; verifiers will read it at their next poll');
    });
  }

  /**
   * Adds the sorted set, and `oauth_clients` when its sweep is due, to what is held (changed in
   * place: announcements applied during the load are kept). The first load always answers, so
   * announcements have a value to go to; a later one fails when a part failed, after keeping the rest.
   */
  private async load(previous: RevokedClients | undefined): Promise<RevokedClients> {
    const held = previous ?? { byClient: new Map<string, number>(), sweptAt: 0 };
    const now = Date.now();
    const retention = this.options.revocationRetentionMs;
    const sweep = now - held.sweptAt >= this.options.revocationDbSweepMs;
    const [polled, swept] = await Promise.allSettled([
      this.redis.zrangebyscore(this.setKey, now - retention, '+inf', 'WITHSCORES'),
      sweep ? this.repository.deletedWithin(Math.ceil(retention / 1000)) : Promise.resolve([]),
    ]);
    if (polled.status === 'fulfilled') {
      const flat = polled.value;
      for (let i = 0; i + 1 < flat.length; i += 2) note(held, flat[i]!, Number(flat[i + 1]));
    }
    // Tried every revocationDbSweepMs, as a timer would: a Postgres outage is not hammered.
    if (sweep) held.sweptAt = now;
    if (swept.status === 'fulfilled') for (const r of swept.value) note(held, r.clientId, r.deletedAt.getTime());
    for (const [clientId, at] of held.byClient) if (at < now - retention) held.byClient.delete(clientId);
    const failure = polled.status === 'rejected' ? polled.reason : swept.status === 'rejected' ? swept.reason : undefined;
    if (failure !== undefined && previous !== undefined) throw failure;
    if (failure !== undefined) this.logger.warn(`revocations not read at start-up (${String(failure)}); reading them again every ${this.options.revocationPollMs} ms`);
    return held;
  }
}

function note(held: RevokedClients, clientId: string, at: number): void {
  const known = held.byClient.get(clientId);
  if (known === undefined || at > known) held.byClient.set(clientId, at);
}
