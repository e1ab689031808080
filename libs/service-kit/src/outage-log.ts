import { Inject, Injectable, Logger, type OnApplicationShutdown, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { DependencyFailure, DependencyOutageListener } from '@flagship/problem-details';
import { READINESS_CHECK_TYPES } from './health.controller';
import type { ReadinessCheck } from './readiness';

/** How often a store's readiness check is retried while it is down (ms). */
export const OUTAGE_PROBE_MS = Symbol('OUTAGE_PROBE_MS');

interface Outage {
  since: number;
  failed: number;
  timer: NodeJS.Timeout;
}

/**
 * One warning when requests start failing because a store is unreachable, and one line when it is
 * back, instead of a stack trace per failed request. "Back" is told by the store's readiness check,
 * polled while the outage lasts (the requests themselves may have stopped coming).
 */
@Injectable()
export class OutageLog implements DependencyOutageListener, OnApplicationShutdown {
  private readonly logger = new Logger('Outage');
  private readonly outages = new Map<string, Outage>();
  private checks: ReadinessCheck[] | undefined;

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(READINESS_CHECK_TYPES) private readonly checkTypes: Array<Type<ReadinessCheck>>,
    @Inject(OUTAGE_PROBE_MS) private readonly probeMs: number,
  ) {}

  onDependencyFailure(failure: DependencyFailure): void {
    const name = failure.dependency ?? 'a dependency';
    const open = this.outages.get(name);
    if (open) {
      open.failed++;
      return;
    }
    this.logger.warn(`${name} is unreachable (${failure.reason}); answering 503 with Retry-After until it is back`);
    const outage: Outage = { since: Date.now(), failed: 1, timer: setInterval(() => void this.probe(name, failure.dependency), this.probeMs) };
    outage.timer.unref();
    this.outages.set(name, outage);
  }

  /** Names of the stores currently seen down. */
  get down(): string[] {
    return [...this.outages.keys()];
  }

  private async probe(name: string, dependency: string | undefined): Promise<void> {
    this.checks ??= this.checkTypes.map((t) => this.moduleRef.get(t, { strict: false }));
    // A failure that named no store is over when every store answers.
    const checks = this.checks.filter((c) => dependency === undefined || c.name === dependency);
    try {
      await Promise.all(checks.map((c) => c.check()));
    } catch {
      return;
    }
    const outage = this.outages.get(name);
    if (!outage) return;
    clearInterval(outage.timer);
    this.outages.delete(name);
    this.logger.log(`${name} is back after ${((Date.now() - outage.since) / 1000).toFixed(1)} s; ${outage.failed} request(s) were answered 503 meanwhile`);
  }

  onApplicationShutdown(): void {
    for (const o of this.outages.values()) clearInterval(o.timer);
    this.outages.clear();
  }
}
