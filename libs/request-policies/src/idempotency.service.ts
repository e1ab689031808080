import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { LuaScript, REDIS, REDIS_KEYS, RedisKeys, RedisUnavailableError, withRedis } from '@flagship/redis';
import type { CallerContext } from '@flagship/service-kit';
import { sha256Hex } from './idempotency-key';
import { REQUEST_POLICIES_OPTIONS, type ResolvedRequestPoliciesOptions } from './request-policies.options';

/** What a replay sends back: the first answer's status, selected headers and body. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  /** The JSON value the handler returned (or the problem body); absent for an empty body. */
  body?: unknown;
  /** The body carried a secret and was not stored (@SecretResponse): a retry is told so, not shown it. */
  withheld?: true;
}

export type IdempotencyRecord =
  | { state: 'in-flight'; token: string; fingerprint: string }
  | { state: 'done'; fingerprint: string; response: StoredResponse };

export type ClaimResult = { claimed: true; token: string } | { claimed: false; record: IdempotencyRecord };

/** Completes a claim if it is still ours; if it lapsed and nobody took the key, records anyway. */
const COMPLETE = new LuaScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
local ok, rec = pcall(cjson.decode, v)
if not ok or rec.state ~= 'in-flight' or rec.token ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`);

/** Releases a claim, or renews it (ARGV[2] = ttl), only while it is still ours. */
const RELEASE_OR_RENEW = new LuaScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, rec = pcall(cjson.decode, v)
if not ok or rec.state ~= 'in-flight' or rec.token ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`);

/** How often claims Redis may hold without having said so are retried for release. */
const UNCONFIRMED_SWEEP_MS = 250;

/**
 * The Idempotency-Key store in Redis: one key per (tenant, caller, Idempotency-Key) holding either
 * an in-flight claim (SET NX, short TTL renewed while the handler runs) or the finished response
 * (24 h). Shared by every replica, so a retry landing on another replica is still recognised.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger('Idempotency');
  private redisDown = false;
  /**
   * Claims that may be in Redis though it never said so: the SET went out, then the connection
   * broke or the answer came too late. Such a claim would answer 409 to every retry of its key until
   * its TTL ran out, though nothing runs under it; each is released (only while still ours) as soon
   * as Redis answers again. Keyed by the claim's token (a fresh UUID each).
   */
  private readonly unconfirmed = new Map<string, { storeKey: string; until: number }>();
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_KEYS) private readonly keys: RedisKeys,
    @Inject(REQUEST_POLICIES_OPTIONS) private readonly options: ResolvedRequestPoliciesOptions,
  ) {}

  /**
   * Keys are scoped to tenant and caller (CONTRACT.md section 4), so two callers choosing the same
   * key never see each other's responses. Only authenticated callers have keys: an answer is
   * replayed only to whoever proved the same identity again. The key itself is hashed: it is
   * caller-chosen text of up to 255 characters.
   */
  storeKeyFor(caller: CallerContext, idempotencyKey: string): string {
    const hashed = sha256Hex(idempotencyKey);
    if (caller.tenantId) return this.keys.tenant(caller.tenantId, 'idem', caller.callerId, hashed);
    return this.keys.key('idem', 'caller', caller.callerId, hashed);
  }

  /**
   * Claims the key for this request, or returns what holds it. Throws RedisUnavailableError when
   * Redis is down: the caller must not run the handler without the guarantee.
   */
  async claim(storeKey: string, fingerprint: string): Promise<ClaimResult> {
    const token = randomUUID();
    const inFlight: IdempotencyRecord = { state: 'in-flight', token, fingerprint };
    // Once the request has given up, no further SET of this token may go out: the take-back below is
    // sent after every SET that did, on the same connection, so Redis runs it after them. A round
    // that went on after the give-up could store the claim after its release had found nothing.
    let gaveUp = false;
    const result = await this.guarded(async () => {
      // The holder may expire or release between our SET NX and GET; a few rounds settle it.
      for (let attempt = 0; attempt < 3 && !gaveUp; attempt++) {
        const set = await this.redis.set(storeKey, JSON.stringify(inFlight), 'PX', this.options.idempotencyInFlightTtlMs, 'NX');
        if (set === 'OK') return { claimed: true, token } as const;
        if (gaveUp) break;
        const raw = await this.redis.get(storeKey);
        if (raw !== null) return { claimed: false, record: JSON.parse(raw) as IdempotencyRecord } as const;
      }
      throw new RedisUnavailableError(gaveUp ? 'gave up' : 'the key changed hands three times in a row');
    }).catch((err: unknown) => {
      gaveUp = true;
      if (err instanceof RedisUnavailableError) this.takeBackLater(storeKey, token);
      throw err;
    });
    this.recovered();
    return result;
  }

  /**
   * Records the finished response for replay. Best effort: the handler has already acted, so a
   * failure here is logged and the response still goes out (a later retry may then run again).
   */
  async complete(storeKey: string, token: string, fingerprint: string, response: StoredResponse): Promise<boolean> {
    const record: IdempotencyRecord = { state: 'done', fingerprint, response };
    try {
      const stored = await this.guarded(() => COMPLETE.run(this.redis, [storeKey], [token, JSON.stringify(record), this.options.idempotencyTtlMs]));
      if (stored !== 1) this.logger.warn(`idempotency claim ${storeKey} was taken over before completion; the first result stands`);
      return stored === 1;
    } catch (err) {
      this.logger.error({ err, key: storeKey }, 'could not record an idempotent response; a retry will run the request again');
      return false;
    }
  }

  /** Gives the key back so a retry runs afresh (after a 5xx). Best effort: the claim expires anyway. */
  async release(storeKey: string, token: string): Promise<void> {
    try {
      await this.releaseClaim(storeKey, token);
    } catch (err) {
      this.logger.warn(`could not release idempotency claim ${storeKey} (${(err as Error).message}); it expires in ${this.options.idempotencyInFlightTtlMs} ms`);
    }
  }

  /**
   * Renews the claim while the handler runs, so a slow request is never run twice; if this process
   * dies, the claim lapses within the in-flight TTL. Returns the function that stops renewing.
   */
  keepAlive(storeKey: string, token: string): () => void {
    const ttl = this.options.idempotencyInFlightTtlMs;
    const timer = setInterval(() => {
      this.guarded(() => RELEASE_OR_RENEW.run(this.redis, [storeKey], [token, ttl])).catch(() => undefined);
    }, Math.max(10, Math.floor(ttl / 3)));
    timer.unref();
    return () => clearInterval(timer);
  }

  private takeBackLater(storeKey: string, token: string): void {
    // Bounded: past this many, the rest lapse with their TTL as before.
    if (this.unconfirmed.size >= 10_000) return;
    this.unconfirmed.set(token, { storeKey, until: Date.now() + this.options.idempotencyInFlightTtlMs });
    this.sweeper ??= setInterval(() => void this.sweep(), UNCONFIRMED_SWEEP_MS).unref();
  }

  /** Releases the unconfirmed claims while Redis answers; stops at the first failure, until the next sweep. */
  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const [token, c] of this.unconfirmed) {
        if (Date.now() >= c.until) {
          this.unconfirmed.delete(token); // lapsed by itself
          continue;
        }
        try {
          await this.releaseClaim(c.storeKey, token);
          this.unconfirmed.delete(token);
        } catch {
          return;
        }
      }
    } finally {
      this.sweeping = false;
      if (this.unconfirmed.size === 0 && this.sweeper !== undefined) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
    }
  }

  /** Deletes the claim if it is still ours and in flight; throws while Redis is unavailable. */
  private releaseClaim(storeKey: string, token: string): Promise<unknown> {
    return this.guarded(() => RELEASE_OR_RENEW.run(this.redis, [storeKey], [token, '']));
  }

  private async guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await withRedis(this.redis, this.options.redisTimeoutMs, work);
    } catch (err) {
      if (err instanceof RedisUnavailableError && !this.redisDown) {
        this.redisDown = true;
        this.logger.warn(`requests carrying an Idempotency-Key are refused while Redis is unavailable (${err.message})`);
      }
      throw err;
    }
  }

  private recovered(): void {
    if (!this.redisDown) return;
    this.redisDown = false;
    this.logger.log('Redis is back; Idempotency-Key requests are served again');
  }
}
