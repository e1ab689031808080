import type { OutgoingHttpHeaders } from 'node:http';
import type Redis from 'ioredis';
import type { RedisKeys } from '@flagship/redis';
import { dependencyDown, GatewayError } from '../gateway.errors';

export interface RateLimits {
  requestsPerMinute: number;
  tokensPerMinute: number;
}

const WINDOW_MS = 60_000;

/**
 * Step 6: requests and tokens per OAuth client per minute, counted in Redis so every replica shares
 * the budget (a fixed one-minute window: two counters, one pipelined round trip). Tokens are the
 * request's estimate (input text plus the output it may produce), counted when it is admitted.
 * OpenAI's `x-ratelimit-*` headers go on every answer from here on; over either limit: 429
 * `rate_limited` with `retry-after`.
 */
export class RateLimitStep {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly limits: RateLimits,
    private readonly now: () => number = Date.now,
  ) {}

  async take(clientId: string, tokens: number): Promise<OutgoingHttpHeaders> {
    const now = this.now();
    const window = Math.floor(now / WINDOW_MS);
    const resetS = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
    const requestsKey = this.keys.key('gw', 'rl', clientId, window, 'r');
    const tokensKey = this.keys.key('gw', 'rl', clientId, window, 't');
    let results: Array<[Error | null, unknown]> | null;
    try {
      results = await this.redis
        .multi()
        .incr(requestsKey)
        .incrby(tokensKey, tokens)
        .pexpire(requestsKey, WINDOW_MS * 2)
        .pexpire(tokensKey, WINDOW_MS * 2)
        .exec();
    } catch {
      throw dependencyDown('Redis');
    }
    if (results === null || results.some(([err]) => err !== null)) throw dependencyDown('Redis');
    const requests = Number(results[0]![1]);
    const used = Number(results[1]![1]);
    const { requestsPerMinute, tokensPerMinute } = this.limits;
    const headers: OutgoingHttpHeaders = {
      'x-ratelimit-limit-requests': String(requestsPerMinute),
      'x-ratelimit-remaining-requests': String(Math.max(0, requestsPerMinute - requests)),
      'x-ratelimit-reset-requests': `${resetS}s`,
      'x-ratelimit-limit-tokens': String(tokensPerMinute),
      'x-ratelimit-remaining-tokens': String(Math.max(0, tokensPerMinute - used)),
      'x-ratelimit-reset-tokens': `${resetS}s`,
    };
    if (requests > requestsPerMinute || used > tokensPerMinute) {
      const which = requests > requestsPerMinute ? `${requestsPerMinute} requests` : `${tokensPerMinute} tokens`;
      throw new GatewayError(429, 'rate_limited', `Rate limit of ${which} per minute reached for this client; try again in ${resetS} s.`, null, {
        ...headers,
        'retry-after': String(resetS),
      });
    }
    return headers;
  }
}
