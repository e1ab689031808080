import { Controller, Get, Header, Inject, ServiceUnavailableException, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, type HealthCheckResult } from '@nestjs/terminus';
import { CommonProblems, ProblemException } from '@flagship/problem-details';
import type { ReadinessCheck } from './readiness';
import { HttpMetrics } from './metrics';
import { Public } from './public-route';

export const READINESS_CHECK_TYPES = Symbol('READINESS_CHECK_TYPES');

@ApiExcludeController()
@Public()
@Controller()
export class HealthController {
  private checks: ReadinessCheck[] | undefined;

  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly moduleRef: ModuleRef,
    private readonly metrics: HttpMetrics,
    @Inject(READINESS_CHECK_TYPES) private readonly checkTypes: Array<Type<ReadinessCheck>>,
  ) {}

  /** Liveness: the process answers. It never looks at dependencies, so an outage restarts nothing. */
  @Get('healthz')
  liveness(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Readiness: every dependency answers; otherwise a 503 problem naming what is down. */
  @Get('readyz')
  @HealthCheck()
  async readiness(): Promise<HealthCheckResult> {
    this.checks ??= this.checkTypes.map((t) => this.moduleRef.get(t, { strict: false }));
    try {
      return await this.health.check(
        this.checks.map((c) => async () => {
          const indicator = this.indicators.check(c.name);
          try {
            await c.check();
            return indicator.up();
          } catch (err) {
            return indicator.down({ message: err instanceof Error ? err.message : String(err) });
          }
        }),
      );
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      const result = err.getResponse() as HealthCheckResult;
      const down = Object.entries(result.error ?? {}).map(([name, v]) => `${name} (${String((v as { message?: unknown }).message ?? 'down')})`);
      throw new ProblemException(CommonProblems['not-ready'], `Not ready: ${down.join(', ')} unreachable.`, { checks: result.details });
    }
  }

  @Get('metrics')
  @Header('Cache-Control', 'no-store')
  async prometheus(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
