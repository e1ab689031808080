import { type DynamicModule, Module, type Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { LoggerModule } from 'nestjs-pino';
import { traceLogMixin } from '@flagship/tracing';
import { ContentTypeGuard, DEPENDENCY_OUTAGE_LISTENER, ProblemDetailsFilter, StrictValidationPipe } from '@flagship/problem-details';
import { DEGRADED_WITHOUT, HealthController, READINESS_CHECK_TYPES } from './health.controller';
import { HttpMetrics } from './metrics';
import { OUTAGE_PROBE_MS, OutageLog } from './outage-log';
import type { ReadinessCheck } from './readiness';
import type { IncomingMessage } from 'node:http';
import { clientRequestIdOf } from './request-id';

const SYNTHETIC_ERROR = /^failed with status code \d+$/;

export interface ServiceKitOptions {
  serviceName: string;
  logLevel: string;
  /** Providers (from the app's modules) that /readyz checks. */
  readiness: Array<Type<ReadinessCheck>>;
  /**
   * Names of readiness checks the app keeps serving without (management-api evaluates from memory
   * with Redis down): while only these are down, /readyz answers 200 with status `degraded`.
   */
  degradedWithout?: readonly string[];
  /** Node's default process metrics; off in tests that boot several apps in one process. */
  defaultMetrics?: boolean;
  /**
   * Access logs and request-bound loggers for the routes Nest serves (default on). nestjs-pino binds
   * each request's logger with an AsyncLocalStorage, and on Node 20 the first such request switches
   * async hooks on for the whole process, for good: every later async step of every request pays
   * for them, orep-server's evaluation requests too, which never go through Nest (docs/decisions/2026-11-29-serving-loop-costs.md).
   * orep-server turns this off; its Nest routes are health, metrics and the OpenAPI page.
   */
  requestLogging?: boolean;
}

/** What every app shares: logging with request ids, problem details, validation, health and metrics. */
@Module({})
export class ServiceKitModule {
  static forRoot(options: ServiceKitOptions): DynamicModule {
    // With tracing on, each line carries the active span's trace_id and span_id; off, no mixin runs.
    const mixin = traceLogMixin();
    return {
      module: ServiceKitModule,
      global: true,
      imports: [
        TerminusModule.forRoot({ logger: false }),
        LoggerModule.forRoot({
          pinoHttp: {
            name: options.serviceName,
            level: options.logLevel,
            ...(mixin === undefined ? {} : { mixin }),
            // The request id was assigned by the first middleware (see bootstrap).
            genReqId: (req) => (req as { id?: string }).id ?? '',
            redact: {
              paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]'],
              censor: '[redacted]',
            },
            autoLogging: { ignore: (req) => ['/healthz', '/readyz', '/metrics'].includes(req.url ?? '') },
            // For a 5xx pino-http invents an Error('failed with status code N') whose stack points
            // into pino-http: one useless stack per request during an outage. The status is in
            // `res`; real errors are logged by the problem-details filter (outages once, by OutageLog).
            customErrorObject: (_req, _res, err, val) => (SYNTHETIC_ERROR.test(err.message) ? { ...val, err: undefined } : val),
            serializers: {
              // pino-http hands the serializer its own copy of the request; the caller's id comes from its headers.
              req: (req: { id: string; method: string; url: string; headers?: IncomingMessage['headers'] }) => {
                const clientRequestId = clientRequestIdOf({ headers: req.headers ?? {} } as IncomingMessage);
                return { id: req.id, method: req.method, url: req.url, ...(clientRequestId === undefined ? {} : { clientRequestId }) };
              },
            },
          },
          ...(options.requestLogging === false ? { forRoutes: [] } : {}),
        }),
      ],
      controllers: [HealthController],
      providers: [
        { provide: HttpMetrics, useValue: new HttpMetrics(options.serviceName, options.defaultMetrics ?? true) },
        { provide: READINESS_CHECK_TYPES, useValue: options.readiness },
        { provide: DEGRADED_WITHOUT, useValue: options.degradedWithout ?? [] },
        { provide: OUTAGE_PROBE_MS, useValue: 1000 },
        OutageLog,
        { provide: DEPENDENCY_OUTAGE_LISTENER, useExisting: OutageLog },
        { provide: APP_FILTER, useClass: ProblemDetailsFilter },
        { provide: APP_PIPE, useClass: StrictValidationPipe },
        { provide: APP_GUARD, useClass: ContentTypeGuard },
      ],
      exports: [HttpMetrics, OutageLog],
    };
  }
}
