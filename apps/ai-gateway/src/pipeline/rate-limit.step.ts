import type { OutgoingHttpHeaders } from 'node:http';
import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import { TurnBatcher } from '@flagship/batching';
import type { Plan } from '@flagship/domain';
import { LuaScript, type RedisKeys, RedisUnavailableError, runScripts } from '@flagship/redis';
import { type RateLimitDecision, type RateLimitService } from '@flagship/request-policies';
import { dependencyDown, GatewayError } from '../gateway.errors';

export interface RateLimits {
  requestsPerMinute: number;
  tokensPerMinute: number;
}

/** Requests per tenant per minute by plan, counted by request-policies' limiter (GATEWAY_TENANT_RATE_LIMIT_RPM). */
export interface TenantRateLimits {
  limiter: Pick<RateLimitService, 'planMany'>;
  perPlan: Readonly<Record<Plan, number>>;
}

const WINDOW_MS = 60_000;

/** One request's counts: its client's two counters, and its tenant's limit when there is one. */
interface Counted {
  requestsKey: string;
  tokensKey: string;
  tokens: number;
  tenant?: { key: string; limit: number };
}

/**
 * One batch's counts in one command: for each request, KEYS[2i-1] (requests) += 1 and KEYS[2i]
 * (tokens) += ARGV[i+1], both kept for ARGV[1] ms; answers the counts after, two per request.
 * One command per batch rather than four per request: ioredis' per-command cost showed in the gateway's
 * CPU (docs/decisions/2026-11-29-gateway-hot-path.md).
 */
const TAKE = new LuaScript(`
local out = {}
for i = 1, #KEYS, 2 do
  out[i] = redis.call('INCR', KEYS[i])
  out[i + 1] = redis.call('INCRBY', KEYS[i + 1], ARGV[(i + 1) / 2 + 1])
  redis.call('PEXPIRE', KEYS[i], ARGV[1])
  redis.call('PEXPIRE', KEYS[i + 1], ARGV[1])
end
return out`);

/**
 * Tokens given back by requests refused after they were counted: KEYS[i] -= ARGV[i], only while the
 * window's counter still exists (a window already expired is not brought back, below zero and without
 * an expiry).
 */
const GIVE_BACK = new LuaScript(`
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('DECRBY', KEYS[i], ARGV[i]) end
end
return #KEYS`);

/** What a request took from its client's window: the answer's headers, and what refuse() gives back. */
export interface Taken {
  headers: OutgoingHttpHeaders;
  tokensKey: string;
  tokens: number;
  /** The window's tokens counted once this request's were. */
  used: number;
}

interface GiveBack {
  tokensKey: string;
  tokens: number;
}

/**
 * Step 6: requests and tokens per OAuth client per minute, counted in Redis so every replica shares
 * the budget (a fixed one-minute window: two counters), and requests per tenant per minute by plan
 * (request-policies' sliding window, shared with nothing else: its own key), so a tenant's many
 * clients together cannot take more than its plan allows. Tokens are the
 * request's estimate (input text plus the output it may produce), counted when it is admitted. The
 * counts of one event-loop turn's requests go to Redis in one script call (TAKE), in one pipeline with
 * the tenant limiter's runs (RateLimitService.planMany): one round trip a turn for both. Each fails as
 * before: Redis unreachable or TAKE failing is 503 (the client limits are not skipped); a tenant run
 * failing alone serves the request uncounted by its tenant's limit, as the limiter does everywhere.
 * OpenAI's `x-ratelimit-*` headers go on every answer from here on; over either limit: 429
 * `rate_limited` with `retry-after`. A request refused (the 429 itself, or later: credit, budget, an
 * outage) gives its tokens back (refuse()), so refusals never spend the client's window: one request
 * too large for the window, or a tenant out of credit, would otherwise block the client's next
 * requests for the rest of the minute. Only requests go on counting: an attempt is an attempt.
 */
export class RateLimitStep {
  private readonly logger = new Logger('RateLimitStep');
  private readonly batcher: TurnBatcher<Counted, { counts: [number, number]; tenant: RateLimitDecision | undefined }>;
  private readonly givingBack: TurnBatcher<GiveBack, undefined>;

  constructor(
    redis: Redis,
    private readonly keys: RedisKeys,
    private readonly limits: RateLimits,
    private readonly tenants?: TenantRateLimits,
    private readonly now: () => number = Date.now,
  ) {
    const limiter = tenants?.limiter;
    this.batcher = new TurnBatcher(async (batch) => {
      const keys: string[] = [];
      const args: number[] = [WINDOW_MS * 2];
      for (const b of batch) {
        keys.push(b.requestsKey, b.tokensKey);
        args.push(b.tokens);
      }
      const tenanted = batch.flatMap((b) => (b.tenant === undefined ? [] : [b.tenant]));
      const plan = limiter && tenanted.length > 0 ? limiter.planMany(tenanted) : undefined;
      let replies: unknown[];
      try {
        replies = await runScripts(redis, [{ script: TAKE, keys, args }, ...(plan?.calls ?? [])]);
      } catch (err) {
        plan?.decide(new RedisUnavailableError(err instanceof Error ? err.message : String(err)));
        throw err;
      }
      const decisions = plan?.decide(replies.slice(1)) ?? [];
      const counts = replies[0];
      if (!Array.isArray(counts) || counts.length !== keys.length) throw new Error('the rate-limit counters could not be updated');
      let t = 0;
      return batch.map((b, i) => ({
        counts: [Number(counts[2 * i]), Number(counts[2 * i + 1])] as [number, number],
        tenant: b.tenant === undefined ? undefined : decisions[t++],
      }));
    }, 500);
    this.givingBack = new TurnBatcher(async (batch) => {
      const [reply] = await runScripts(redis, [{ script: GIVE_BACK, keys: batch.map((b) => b.tokensKey), args: batch.map((b) => b.tokens) }]);
      if (reply instanceof Error) throw reply;
      return batch.map(() => undefined);
    }, 500);
  }

  /**
   * Gives a refused request's tokens back to its client's window (batched per event-loop turn, not
   * waited for: a failure only leaves them counted until the window ends) and answers its headers
   * as they stand then.
   */
  refuse(taken: Taken): OutgoingHttpHeaders {
    if (taken.tokens > 0) {
      this.givingBack.add({ tokensKey: taken.tokensKey, tokens: taken.tokens }).catch((err: unknown) => this.logger.warn({ err }, 'cannot give a refused request\'s tokens back to its rate-limit window'));
    }
    const remaining = Math.min(this.limits.tokensPerMinute, Math.max(0, this.limits.tokensPerMinute - (taken.used - taken.tokens)));
    return { ...taken.headers, 'x-ratelimit-remaining-tokens': String(remaining) };
  }

  async take(clientId: string, tokens: number, tenant?: { id: string; plan: string }): Promise<Taken> {
    const now = this.now();
    const window = Math.floor(now / WINDOW_MS);
    const resetS = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
    const requestsKey = this.keys.key('gw', 'rl', clientId, window, 'r');
    const tokensKey = this.keys.key('gw', 'rl', clientId, window, 't');
    const tenantLimit = tenant && this.tenants ? (this.tenants.perPlan[tenant.plan as Plan] ?? this.tenants.perPlan.free) : undefined;
    let requests: number;
    let used: number;
    let decision: RateLimitDecision | undefined;
    try {
      const counted = await this.batcher.add({
        requestsKey,
        tokensKey,
        tokens,
        tenant: tenant && tenantLimit !== undefined ? { key: this.keys.tenant(tenant.id, 'rl', 'gateway'), limit: tenantLimit } : undefined,
      });
      [requests, used] = counted.counts;
      decision = counted.tenant;
    } catch {
      throw dependencyDown('Redis');
    }
    const { requestsPerMinute, tokensPerMinute } = this.limits;
    const headers: OutgoingHttpHeaders = {
      'x-ratelimit-limit-requests': String(requestsPerMinute),
      'x-ratelimit-remaining-requests': String(Math.max(0, requestsPerMinute - requests)),
      'x-ratelimit-reset-requests': `${resetS}s`,
      'x-ratelimit-limit-tokens': String(tokensPerMinute),
      'x-ratelimit-remaining-tokens': String(Math.max(0, tokensPerMinute - used)),
      'x-ratelimit-reset-tokens': `${resetS}s`,
    };
    const taken: Taken = { headers, tokensKey, tokens, used };
    if (requests > requestsPerMinute || used > tokensPerMinute) {
      const which = requests > requestsPerMinute ? `${requestsPerMinute} requests` : `${tokensPerMinute} tokens`;
      throw new GatewayError(429, 'rate_limited', `Rate limit of ${which} per minute reached for this client; try again in ${resetS} s.`, null, {
        ...this.refuse(taken),
        'retry-after': String(resetS),
      });
    }
    if (decision !== undefined && !decision.allowed) {
      const retryS = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      throw new GatewayError(
        429,
        'rate_limited',
        `Rate limit of ${decision.limit} requests per minute reached for this tenant (all its clients together); try again in ${retryS} s.`,
        null,
        { ...this.refuse(taken), 'retry-after': String(retryS) },
      );
    }
    return taken;
  }
}
