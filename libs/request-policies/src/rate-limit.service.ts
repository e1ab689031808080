import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Request } from 'express';
import type Redis from 'ioredis';
import { LuaScript, REDIS, REDIS_KEYS, RedisKeys, RedisUnavailableError, runScripts, type ScriptCall, withRedis } from '@flagship/redis';
import { type CallerContext, callerOf } from '@flagship/service-kit';
import type { RateLimitRule } from './rate-limit.decorator';
import { clientAddress, rateLimitSubject, type RateLimitSubject } from './rate-limit.subject';
import { REQUEST_POLICIES_OPTIONS, type ResolvedRequestPoliciesOptions } from './request-policies.options';

/** The outcome of counting one request. */
export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  /** The window the limit applies to. */
  windowMs: number;
  /** Requests left in the window after this one. */
  remaining: number;
  /** Milliseconds until the current fixed window ends (the earlier window's weight then starts over). */
  resetMs: number;
  /** When refused: milliseconds until one request would be allowed again; else 0. */
  retryAfterMs: number;
}

/**
 * Sliding-window counter (the approximation Cloudflare and others use): the count of the current
 * fixed window plus the previous window's count weighted by how much of it still overlaps the
 * last `window` milliseconds. Unlike a fixed window it allows no double burst at a boundary, and
 * unlike a sliding log it costs one small hash per subject. Refused requests are not counted, so a
 * client that keeps retrying still gets back in once its rate falls.
 *
 * One script call reads, decides and writes, so replicas racing on one subject cannot overspend.
 * The time is Redis' own (TIME) unless the caller passes one, so replicas with skewed clocks still
 * agree on window boundaries.
 *
 * KEYS[1] the subject's hash {w: window index, c: current count, p: previous count}
 * ARGV limit, window ms, now ms ('' = Redis time), n requests (default 1)
 * returns {allowed: how many of the n were allowed (the first ones; 0|1 for one), remaining after
 * them, reset ms, retry-after ms for the refused ones}
 */
const SLIDING_WINDOW = new LuaScript(`
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local idx = math.floor(now / window)
local state = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local w = tonumber(state[1])
local c = tonumber(state[2]) or 0
local p = tonumber(state[3]) or 0
if w == nil then
  c, p = 0, 0
elseif w == idx - 1 then
  p, c = c, 0
elseif w < idx - 1 then
  c, p = 0, 0
elseif w > idx then
  idx = w
end
local elapsed = now - idx * window
if elapsed < 0 then elapsed = 0 end
-- Everything scaled by the window so comparisons stay in exact integers: 'used' is
-- p * (window - elapsed) / window + c requests.
local capacity = limit * window
local function used() return p * (window - elapsed) + c * window end
local n = tonumber(ARGV[4]) or 1
local allowed = 0
while allowed < n and used() + window <= capacity do
  c = c + 1
  allowed = allowed + 1
end
redis.call('HSET', KEYS[1], 'w', idx, 'c', c, 'p', p)
redis.call('PEXPIRE', KEYS[1], window * 2)
local reset = window - elapsed
local retry = 0
if allowed < n then
  -- Solving p * (window - e) / window + c + 1 <= limit for the elapsed time e, kept as one
  -- integer division so no rounding error adds a millisecond.
  if c + 1 <= limit then
    retry = math.ceil(window * (p - (limit - c - 1)) / p) - elapsed
  else
    retry = reset + math.ceil(window * (c - (limit - 1)) / c)
  end
  if retry < 1 then retry = 1 end
end
local remaining = math.floor((capacity - used()) / window)
if remaining < 0 then remaining = 0 end
return {allowed, remaining, reset, retry}
`);

/** consumeMany's runs for a pipeline of the caller's, and how their replies become decisions (RateLimitService.planMany). */
export interface RateLimitPlan {
  calls: ScriptCall[];
  /** The runs' replies in order, or the pipeline's failure (then every decision is undefined: fail open). */
  decide(replies: unknown): Array<RateLimitDecision | undefined>;
}

/** How long the limiter leaves Redis alone after a failure. */
const REDIS_RETRY_PAUSE_MS = 1000;

/** Budgets per tenant, caller or client address, kept in Redis so every replica spends from one. */
@Injectable()
export class RateLimitService {
  private readonly logger = new Logger('RateLimit');
  /** Logging once per outage, not once per request: an outage under load would flood the logs. */
  private redisDown = false;
  /**
   * After a failure, Redis is not asked again for a moment: a Redis that hangs (rather than
   * refusing connections) would otherwise add the whole timeout to every request.
   */
  private skipRedisUntil = 0;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_KEYS) private readonly keys: RedisKeys,
    @Inject(REQUEST_POLICIES_OPTIONS) private readonly options: ResolvedRequestPoliciesOptions,
  ) {}

  /** The budget a request is charged to; callerOf(req) was set by the app's auth guard. */
  subjectOf(req: Request, rule?: RateLimitRule): RateLimitSubject {
    return this.subjectFor(callerOf(req), clientAddress(req), rule);
  }

  /** The same, for a caller resolved outside Nest's guards (the lean routes). */
  subjectFor(caller: CallerContext | undefined, address: string, rule?: RateLimitRule): RateLimitSubject {
    return rateLimitSubject(caller, address, rule, this.options, this.keys);
  }

  /**
   * Counts one request against `subject`. Resolves `undefined` when Redis is down or slow: the
   * request is then served uncounted (fail open), because a rate limiter must not take the API down
   * with it; the outage is logged once and readiness reports it.
   *
   * `nowMs` replaces Redis' clock (tests, tools); leave it out in the apps. A subject with its own
   * `windowMs` (a budget per hour, say) is counted over that window instead of the module's.
   */
  async consume(subject: Pick<RateLimitSubject, 'key' | 'limit'> & { windowMs?: number }, nowMs?: number): Promise<RateLimitDecision | undefined> {
    if (Date.now() < this.skipRedisUntil) return undefined;
    const windowMs = subject.windowMs ?? this.options.windowMs;
    let reply: unknown;
    try {
      reply = await withRedis(this.redis, this.options.redisTimeoutMs, () =>
        SLIDING_WINDOW.run(this.redis, [subject.key], [subject.limit, windowMs, nowMs === undefined ? '' : Math.floor(nowMs)]),
      );
    } catch (err) {
      this.failed(err);
      return undefined;
    }
    this.succeeded();
    return this.decision(subject, windowMs, reply);
  }

  /**
   * `consume` for many requests in one Redis round trip (a pipeline), as the hot paths batch the
   * requests of one event-loop turn. Each decision is the one `consume` would give in that order.
   * The requests of one subject (a busy tenant's whole batch, typically) are one script run that
   * counts them all: refusals change nothing, so its first allowed ones are what one run each gives.
   */
  async consumeMany(subjects: ReadonlyArray<Pick<RateLimitSubject, 'key' | 'limit'>>): Promise<Array<RateLimitDecision | undefined>> {
    const plan = this.planMany(subjects);
    if (plan.calls.length === 0) return plan.decide([]);
    let replies: unknown[];
    try {
      replies = await withRedis(this.redis, this.options.redisTimeoutMs, () => runScripts(this.redis, plan.calls));
    } catch (err) {
      return plan.decide(err);
    }
    return plan.decide(replies);
  }

  /**
   * consumeMany in two halves, for a caller that sends these runs in its own pipeline beside its
   * own scripts (runScripts: one round trip for both): the script runs to send (none while Redis is
   * being left alone after a failure), and `decide`, which takes their replies in order (or the
   * pipeline's failure, which fails open as consumeMany does) and answers one decision per subject.
   */
  planMany(subjects: ReadonlyArray<Pick<RateLimitSubject, 'key' | 'limit'>>): RateLimitPlan {
    if (Date.now() < this.skipRedisUntil) return { calls: [], decide: () => subjects.map(() => undefined) };
    const runs = new Map<string, { subject: Pick<RateLimitSubject, 'key' | 'limit'>; n: number }>();
    /** Each request's run (by key and limit) and its place among the run's requests. */
    const places = subjects.map((s) => {
      const id = `${s.limit}\n${s.key}`;
      const run = runs.get(id) ?? { subject: s, n: 0 };
      runs.set(id, run);
      return { id, at: run.n++ };
    });
    const ids = [...runs.keys()];
    const calls = ids.map((id): ScriptCall => {
      const { subject, n } = runs.get(id)!;
      return { script: SLIDING_WINDOW, keys: [subject.key], args: [subject.limit, this.options.windowMs, '', n] };
    });
    const decide = (replies: unknown): Array<RateLimitDecision | undefined> => {
      if (!Array.isArray(replies)) {
        this.failed(replies);
        return subjects.map(() => undefined);
      }
      const failure = replies.find((r) => r instanceof Error);
      if (failure !== undefined) this.failed(failure);
      else this.succeeded();
      const byId = new Map(ids.map((id, i) => [id, replies[i]]));
      return subjects.map((s, i) => {
        const { id, at } = places[i]!;
        const reply = byId.get(id);
        if (reply === undefined || reply instanceof Error) return undefined;
        const [allowedCount, remaining, resetMs, retryAfterMs] = (reply as Array<number | string>).map(Number) as [number, number, number, number];
        const allowed = at < allowedCount;
        return {
          allowed,
          limit: s.limit,
          windowMs: this.options.windowMs,
          remaining: allowed ? remaining + (allowedCount - 1 - at) : remaining,
          resetMs,
          retryAfterMs: allowed ? 0 : retryAfterMs,
        };
      });
    };
    return { calls, decide };
  }

  private decision(subject: Pick<RateLimitSubject, 'limit'>, windowMs: number, reply: unknown): RateLimitDecision {
    const [allowed, remaining, resetMs, retryAfterMs] = (reply as Array<number | string>).map(Number);
    return { allowed: allowed === 1, limit: subject.limit, windowMs, remaining, resetMs, retryAfterMs };
  }

  /** Any failure fails open, a reply error (a bug) included: it is logged, never a 500. */
  private failed(err: unknown): void {
    this.skipRedisUntil = Date.now() + REDIS_RETRY_PAUSE_MS;
    if (!this.redisDown) {
      this.redisDown = true;
      const reason = err instanceof RedisUnavailableError ? err.message : `unexpected reply: ${(err as Error).message}`;
      this.logger.warn(`rate limits are not enforced while Redis is unavailable (${reason}); serving requests uncounted`);
    }
  }

  private succeeded(): void {
    if (this.redisDown) {
      this.redisDown = false;
      this.logger.log('Redis is back; rate limits are enforced again');
    }
  }
}

/**
 * The headers of a decision (IETF draft "RateLimit header fields", the three-header form).
 * `RateLimit-Reset` is the seconds until the current window ends, or, when refused, until a request
 * would pass again (then equal to `Retry-After`).
 */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'RateLimit-Limit': String(decision.limit),
    'RateLimit-Remaining': String(decision.remaining),
    'RateLimit-Reset': String(Math.max(1, Math.ceil((decision.allowed ? decision.resetMs : decision.retryAfterMs) / 1000))),
  };
  if (!decision.allowed) headers['Retry-After'] = headers['RateLimit-Reset'];
  return headers;
}
