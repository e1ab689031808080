import { Inject, Injectable, Optional } from '@nestjs/common';
import { PostgresReadiness } from '@flagship/persistence';
import { CommonProblems } from '@flagship/problem-details';
import { RedisReadiness } from '@flagship/redis';
import { isInternalRequest, type ReadinessCheck } from '@flagship/service-kit';
import type { Exchange } from '@flagship/lean-http';
import { FLAG_SOURCE, type FlagSource } from '../sources/flag-source';

type CheckDetail = { status: 'up' | 'down'; [detail: string]: unknown };

/** For the shared HealthController: ready exactly when flags are loaded (its check keeps the name `snapshot`, which /readyz reports). */
@Injectable()
export class FlagsLoadedReadiness implements ReadinessCheck {
  readonly name = 'snapshot';

  constructor(@Inject(FLAG_SOURCE) private readonly source: FlagSource) {}

  async check(): Promise<void> {
    if (this.source.liveSet === null) throw new Error('no flags loaded yet');
  }
}

/**
 * This app's /readyz. Unlike the other apps, orep-server stays ready while Postgres or Redis is down:
 * it serves its last good flags, and taking it out of a load balancer then would turn a
 * dependency outage into an evaluation outage. So: 200 whenever flags are loaded, with the state of
 * each dependency and the flags' age in the details (under `snapshot`, a name kept for its readers); 503 only before the first load.
 * (The fast path answers GET /readyz with this; service-kit's HealthController would 503 on any
 * dependency, and its ReadinessCheck cannot carry details into a 200.)
 */
@Injectable()
export class OrepReadiness {
  constructor(
    @Inject(FLAG_SOURCE) private readonly source: FlagSource,
    @Optional() private readonly postgres?: PostgresReadiness,
    @Optional() private readonly redis?: RedisReadiness,
  ) {}

  async details(): Promise<{ ready: boolean; checks: Record<string, CheckDetail> }> {
    const set = this.source.liveSet;
    const status = this.source.status();
    const syncedAt = typeof status.syncedAt === 'string' ? status.syncedAt : status.loadedAt;
    const checks: Record<string, CheckDetail> = {
      snapshot: {
        status: set ? 'up' : 'down',
        ...status,
        ...(syncedAt !== undefined ? { ageSeconds: Math.max(0, Math.round((Date.now() - Date.parse(syncedAt)) / 100) / 10) } : {}),
      },
    };
    const dependencies = [this.postgres, this.redis].filter((c): c is PostgresReadiness | RedisReadiness => c !== undefined);
    await Promise.all(
      dependencies.map(async (c) => {
        try {
          await c.check(1000);
          checks[c.name] = { status: 'up' };
        } catch (err) {
          checks[c.name] = { status: 'down', message: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
    return { ready: set !== null, checks };
  }

  /** Public port: the status alone; the internal port (METRICS_PORT): the details too. */
  async answer(x: Exchange): Promise<void> {
    const { ready, checks } = await this.details();
    if (!isInternalRequest(x.req)) {
      if (!ready) return x.problem(CommonProblems['not-ready'], 'Not ready.', undefined, { 'cache-control': 'no-store' });
      return x.json(200, '{"status":"ok"}', { 'cache-control': 'no-store' });
    }
    if (!ready) {
      const down = Object.entries(checks)
        .filter(([, c]) => c.status === 'down')
        .map(([name, c]) => (name === 'snapshot' ? 'no flags loaded yet' : `${name} unreachable (${String(c.message ?? 'down')})`));
      return x.problem(CommonProblems['not-ready'], `Not ready: ${down.join(', ')}.`, { checks }, { 'cache-control': 'no-store' });
    }
    const info: Record<string, CheckDetail> = {};
    const error: Record<string, CheckDetail> = {};
    for (const [name, c] of Object.entries(checks)) (c.status === 'up' ? info : error)[name] = c;
    x.json(200, JSON.stringify({ status: 'ok', info, error, details: checks }), { 'cache-control': 'no-store' });
  }
}
