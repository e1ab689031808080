import { Controller, Get, Header, Inject, Req, ServiceUnavailableException, type Type } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { ModuleRef } from '@nestjs/core';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, type HealthCheckResult } from '@nestjs/terminus';
import { CommonProblems, ProblemException } from '@flagship/problem-details';
import { Registry } from 'prom-client';
import type { ReadinessCheck } from './readiness';
import { HttpMetrics } from './metrics';
import { isInternalRequest } from './internal-port';
import { Public } from './public-route';

export const READINESS_CHECK_TYPES = Symbol('READINESS_CHECK_TYPES');
/** Names of the checks whose outage leaves the app serving (see ServiceKitOptions.degradedWithout). */
export const DEGRADED_WITHOUT = Symbol('DEGRADED_WITHOUT');

/** /readyz when only checks the app can serve without are down: 200, so the replica stays in service. */
export type DegradedHealthCheckResult = Omit<HealthCheckResult, 'status'> & { status: 'degraded' };

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
    @Inject(DEGRADED_WITHOUT) private readonly degradedWithout: readonly string[],
  ) {}

  /** Liveness: the process answers. It never looks at dependencies, so an outage restarts nothing. */
  @Get('healthz')
  liveness(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * Readiness: every dependency answers; otherwise a 503 problem naming what is down. When only
   * checks the app serves without are down, 200 with status `degraded` and them under `error`:
   * taking the replica out of service would turn that outage into an outage of what it still serves.
   * On the public port only the status (a probe reads no more); the details, which name hosts and
   * error messages of the dependencies, on the internal port.
   */
  @Get('readyz')
  @HealthCheck()
  async readiness(@Req() req: IncomingMessage): Promise<HealthCheckResult | DegradedHealthCheckResult | { status: string }> {
    if (isInternalRequest(req)) return this.detailedReadiness();
    try {
      return { status: (await this.detailedReadiness()).status };
    } catch (err) {
      if (err instanceof ProblemException && err.problem.status === 503) throw new ProblemException(CommonProblems['not-ready'], 'Not ready.');
      throw err;
    }
  }

  private async detailedReadiness(): Promise<HealthCheckResult | DegradedHealthCheckResult> {
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
      const downNames = Object.keys(result.error ?? {});
      if (downNames.length > 0 && downNames.every((name) => this.degradedWithout.includes(name))) return { ...result, status: 'degraded' };
      const down = Object.entries(result.error ?? {}).map(([name, v]) => `${name} (${String((v as { message?: unknown }).message ?? 'down')})`);
      throw new ProblemException(CommonProblems['not-ready'], `Not ready: ${down.join(', ')} unreachable.`, { checks: result.details });
    }
  }

  /** Prometheus, on the internal port only; the public port answers as for any unknown route. */
  @Get('metrics')
  @Header('Cache-Control', 'no-store')
  // Prometheus 3 refuses a scrape whose content type it does not know (Nest's default is text/html).
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  async prometheus(@Req() req: IncomingMessage): Promise<string> {
    if (!isInternalRequest(req)) throw new ProblemException(CommonProblems['not-found'], 'No route for GET /metrics.');
    return this.metrics.registry.metrics();
  }
}
