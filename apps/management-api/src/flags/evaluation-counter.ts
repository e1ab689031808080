import { Inject, Injectable } from '@nestjs/common';
import type Redis from 'ioredis';
import { TurnBatcher } from '@flagship/batching';
import { EvaluationRecorder } from '@flagship/flag-store';
import { REDIS, REDIS_KEYS, type RedisKeys } from '@flagship/redis';

interface Counted {
  tenantId: string;
  flagKey: string;
}

/**
 * Evaluations per tenant and the distinct flags evaluated (sandbox indicators), in Redis so every
 * replica adds to one count. The evaluations of one event-loop turn go in one MULTI: one round trip
 * however many there were, instead of one each. Each evaluation is also noted, per environment, for
 * the stale-flags list (EvaluationRecorder: written at most once a minute per flag and environment).
 */
@Injectable()
export class EvaluationCounter {
  private readonly batcher: TurnBatcher<Counted, null>;

  constructor(
    @Inject(REDIS) redis: Redis,
    @Inject(REDIS_KEYS) keys: RedisKeys,
    @Inject(EvaluationRecorder) private readonly recorder: Pick<EvaluationRecorder, 'record'>,
  ) {
    this.batcher = new TurnBatcher<Counted, null>(async (items) => {
      const perTenant = new Map<string, { n: number; flags: Set<string> }>();
      for (const { tenantId, flagKey } of items) {
        let t = perTenant.get(tenantId);
        if (t === undefined) perTenant.set(tenantId, (t = { n: 0, flags: new Set() }));
        t.n++;
        t.flags.add(flagKey);
      }
      const multi = redis.multi();
      for (const [tenantId, t] of perTenant) {
        multi.incrby(keys.tenant(tenantId, 'evaluations'), t.n).sadd(keys.tenant(tenantId, 'evaluated-flags'), ...t.flags);
      }
      await multi.exec();
      return items.map(() => null);
    });
  }

  /** Never blocks nor fails the answer: a count lost to a Redis outage is only an indicator. */
  count(tenantId: string, environment: string, flagKey: string): void {
    this.batcher.add({ tenantId, flagKey }).catch(() => undefined);
    this.recorder.record(tenantId, environment, flagKey);
  }
}
