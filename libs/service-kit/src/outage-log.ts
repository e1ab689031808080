import { Inject, Injectable, Logger, type OnApplicationShutdown, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { DependencyFailure, DependencyOutageListener } from '@flagship/problem-details';
import { READINESS_CHECK_TYPES } from './health.controller';
import type { ReadinessCheck } from './readiness';

/** How often a store's readiness check is retried while it is down (ms). */
export const OUTAGE_PROBE_MS = Symbol('OUTAGE_PROBE_MS');

const UNNAMED = 'a dependency';

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
  private attributing = false;

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(READINESS_CHECK_TYPES) private readonly checkTypes: Array<Type<ReadinessCheck>>,
    @Inject(OUTAGE_PROBE_MS) private readonly probeMs: number,
  ) {}

  onDependencyFailure(failure: DependencyFailure): void {
    if (failure.dependency === undefined) {
      void this.attribute(failure);
      return;
    }
    this.open(failure.dependency, failure.reason);
  }

  private open(name: string, reason: string): void {
    const open = this.outages.get(name);
    if (open) {
      open.failed++;
      return;
    }
    this.logger.warn(`${name} is unreachable (${reason}); answering 503 with Retry-After until it is back`);
    const outage: Outage = { since: Date.now(), failed: 1, timer: setInterval(() => void this.probe(name), this.probeMs) };
    outage.timer.unref();
    this.outages.set(name, outage);
  }

  /**
   * A socket error (ECONNRESET, ECONNREFUSED) does not say whose socket it was: the readiness checks
   * do. While an outage is open its failures are just counted; otherwise one round of checks names
   * the stores that are down (at most one round at a time).
   */
  private async attribute(failure: DependencyFailure): Promise<void> {
    const open = [...this.outages.values()][0];
    if (open) {
      open.failed++;
      return;
    }
    if (this.attributing) return;
    this.attributing = true;
    try {
      const down = await this.failingChecks();
      if (down.length === 0) down.push(UNNAMED);
      for (const name of down) this.open(name, failure.reason);
    } finally {
      this.attributing = false;
    }
  }

  private async failingChecks(names?: string[]): Promise<string[]> {
    this.checks ??= this.checkTypes.map((t) => this.moduleRef.get(t, { strict: false }));
    const checks = this.checks.filter((c) => names === undefined || names.includes(c.name));
    const results = await Promise.allSettled(checks.map((c) => c.check()));
    return checks.filter((_, i) => results[i].status === 'rejected').map((c) => c.name);
  }

  /** Names of the stores currently seen down. */
  get down(): string[] {
    return [...this.outages.keys()];
  }

  private async probe(name: string): Promise<void> {
    // 'a dependency' (no check named it) is over when every check passes.
    if ((await this.failingChecks(name === UNNAMED ? undefined : [name])).length > 0) return;
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
