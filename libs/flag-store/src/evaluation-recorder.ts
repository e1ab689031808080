import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Counter } from 'prom-client';
import type { DataSource } from 'typeorm';
import { Coalescer } from '@flagship/batching';
import { DATA_SOURCE } from '@flagship/persistence';

/** One flag evaluated in one tenant-environment, first seen `at` in the window. */
export interface EvaluatedFlag {
  tenantId: string;
  environment: string;
  flagKey: string;
  at: Date;
}

/** Where the recorder writes (the port its unit spec fakes). */
export interface EvaluationWrites {
  recordEvaluations(rows: readonly EvaluatedFlag[]): Promise<void>;
}

/** flag_evaluations over Postgres. */
@Injectable()
export class EvaluationsRepository implements EvaluationWrites {
  constructor(@Inject(DATA_SOURCE) private readonly dataSource: Pick<DataSource, 'query'>) {}

  /**
   * One statement per batch: the later of the stored time and the new one (replicas' batches land
   * in any order), keys that name no flag of the tenant (deleted meanwhile) left out, rows taken
   * in key order so that two replicas' batches lock them in the same order.
   */
  async recordEvaluations(rows: readonly EvaluatedFlag[]): Promise<void> {
    if (rows.length === 0) return;
    await this.dataSource.query(
      `INSERT INTO flag_evaluations (tenant_id, environment_key, flag_key, last_evaluated_at)
       SELECT x.tenant_id, x.environment_key, x.flag_key, x.at
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[]) AS x(tenant_id, environment_key, flag_key, at)
        WHERE EXISTS (SELECT 1 FROM flags f WHERE f.tenant_id = x.tenant_id AND f.key = x.flag_key)
        ORDER BY x.tenant_id, x.environment_key, x.flag_key
       ON CONFLICT (tenant_id, environment_key, flag_key)
       DO UPDATE SET last_evaluated_at = GREATEST(flag_evaluations.last_evaluated_at, EXCLUDED.last_evaluated_at)`,
      [rows.map((r) => r.tenantId), rows.map((r) => r.environment), rows.map((r) => r.flagKey), rows.map((r) => r.at.toISOString())],
    );
  }
}

export interface EvaluationRecorderOptions {
  /** A flag-environment is written at most once per window (default a minute). */
  windowMs?: number;
  /** Flag-environments one flush writes; past it the oldest of the window are dropped (counted). */
  maxPerFlush: number;
  /** Where the outcomes are counted (`flag_evaluations_recorded_total`); none in a unit spec. */
  registry?: ConstructorParameters<typeof Counter>[0]['registers'];
}

/** Neither a tenant id, an environment key nor a flag key holds it. */
const SEP = '\u0000';

/**
 * When each flag was last evaluated per tenant-environment (the stale-flags list), recorded off the
 * hot path: an evaluation adds its key to the window's set (a string and a map lookup; nothing
 * waits), and the set is written as one statement once the window (a minute) closes, so a
 * flag-environment is written at most once a minute per process however often it is evaluated.
 * The set is bounded (`maxPerFlush`): a tenant evaluating 100,000 flags cannot make it grow past
 * it; the oldest of the window go first (a flag still in use comes back next window). A failed
 * write is dropped, not retried: the next window records the flags still evaluated.
 */
export class EvaluationRecorder implements OnApplicationShutdown {
  private readonly logger = new Logger('EvaluationRecorder');
  private readonly coalescer: Coalescer<string, Map<string, number>>;
  private readonly outcomes: Counter | undefined;
  /** How many were dropped from full windows (as counted; for a spec without a registry too). */
  dropped = 0;

  constructor(
    private readonly writes: EvaluationWrites,
    private readonly options: EvaluationRecorderOptions,
  ) {
    this.outcomes = options.registry
      ? new Counter({
          name: 'flag_evaluations_recorded_total',
          help: 'Flag-environments whose last evaluation was recorded (written), dropped from a full window (dropped), or lost to a failed write (failed)',
          labelNames: ['outcome'],
          registers: options.registry,
        })
      : undefined;
    this.coalescer = new Coalescer<string, Map<string, number>>({
      windowMs: options.windowMs ?? 60_000,
      // A minute's timer must not hold a process (or a test run) open: shutdown flushes it.
      unref: true,
      fold: this.fold,
      emit: (seen) => this.write(seen),
    });
  }

  /** Notes an evaluation; the hot path's whole cost. */
  record(tenantId: string, environment: string, flagKey: string): void {
    this.coalescer.offer(tenantId + SEP + environment + SEP + flagKey);
  }

  /** Writes what the window holds now (shutdown, a test). */
  flush(): Promise<void> {
    return this.coalescer.flush();
  }

  /** What the window holds is written before the process goes, not lost with it. */
  onApplicationShutdown(): Promise<void> {
    return this.flush();
  }

  private readonly fold = (seen: Map<string, number> | undefined, key: string): Map<string, number> => {
    const window = seen ?? new Map<string, number>();
    if (window.has(key)) return window;
    if (window.size >= this.options.maxPerFlush) {
      // A Map iterates in insertion order: the first key is the oldest of the window.
      window.delete(window.keys().next().value as string);
      this.dropped++;
      this.outcomes?.inc({ outcome: 'dropped' });
    }
    window.set(key, Date.now());
    return window;
  };

  private async write(seen: Map<string, number>): Promise<void> {
    const rows: EvaluatedFlag[] = [];
    for (const [key, at] of seen) {
      const [tenantId, environment, flagKey] = key.split(SEP) as [string, string, string];
      rows.push({ tenantId, environment, flagKey, at: new Date(at) });
    }
    try {
      await this.writes.recordEvaluations(rows);
      this.outcomes?.inc({ outcome: 'written' }, rows.length);
    } catch (err) {
      this.outcomes?.inc({ outcome: 'failed' }, rows.length);
      this.logger.warn(`could not record the last evaluation of ${rows.length} flags: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
