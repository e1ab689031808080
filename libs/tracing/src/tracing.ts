/* eslint-disable @typescript-eslint/no-require-imports -- OpenTelemetry is loaded with require() inside
   startTracing, synchronously and only when a collector is configured: a top-level import would load it
   in every process, and a dynamic import() would come too late (after pg, ioredis and http are loaded). */
import type { Attributes, Span, Tracer } from '@opentelemetry/api';
import type { Sampler } from '@opentelemetry/sdk-trace-base';
import { cleanEnv } from 'envalid';
import { expressRoute, type ExpressRoutedRequest } from './express-route';
import { LOCAL_PARENT_SAMPLER, tracingConfigured, tracingEnv } from './tracing.env';

type Api = typeof import('@opentelemetry/api');

interface Running {
  api: Api;
  tracer: Tracer;
  /** Sets the incoming request's `http.route` (and so its span's name); see setHttpRoute. */
  setRoute: (route: string) => void;
  shutdown: () => Promise<void>;
}

let running: Running | undefined;

/** Health probes and scrapes: a span each, several a second per pod, would bury the requests. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Query parameters written as REDACTED in the URLs of HTTP spans: the OAuth flow's codes and tokens,
 * beside the signed-URL parameters the instrumentation redacts by default.
 */
const REDACTED_QUERY = ['code', 'state', 'code_verifier', 'client_secret', 'token', 'access_token', 'refresh_token', 'id_token', 'sig', 'Signature', 'AWSAccessKeyId', 'X-Goog-Signature'];

/**
 * Starts tracing when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and
 * does nothing else otherwise: no OpenTelemetry module is loaded. Must run before pg, ioredis, http
 * and undici are first required (each app's `src/tracing.ts`, main.ts's first import), since the
 * instrumentations patch those modules as they load. Spans go by OTLP/HTTP (JSON), batched; the SDK
 * reads the standard variables (sampler, resource attributes, exporter headers and time-outs).
 * Nothing secret is recorded: no request or response headers, no SQL parameters, Redis commands
 * by name only, OAuth query parameters redacted, no prompt or completion text.
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): boolean {
  if (!tracingConfigured(env)) return false;
  if (running !== undefined) return true;
  const settings = cleanEnv(env, tracingEnv, {
    reporter: ({ errors }) => {
      const bad = Object.entries(errors);
      if (bad.length > 0) throw new Error(`invalid tracing settings: ${bad.map(([k, e]) => `${k}: ${(e as Error).message}`).join('; ')}`);
    },
  });
  const api = require('@opentelemetry/api') as Api;
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, SamplingDecision } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { getRPCMetadata, RPCType } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes, detectResources, envDetector } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { registerInstrumentations } = require('@opentelemetry/instrumentation') as typeof import('@opentelemetry/instrumentation');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { IORedisInstrumentation } = require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof import('@opentelemetry/instrumentation-undici');

  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over the app's name.
  const resource = resourceFromAttributes({ 'service.name': serviceName }).merge(detectResources({ detectors: [envDetector] }));
  // The standard names: the SDK builds their sampler from OTEL_TRACES_SAMPLER (a `sampler: undefined` would hide it).
  let sampler: { sampler: Sampler } | undefined;
  if (settings.OTEL_TRACES_SAMPLER === LOCAL_PARENT_SAMPLER) {
    const ratio = settings.OTEL_TRACES_SAMPLER_ARG === '' ? 1 : Number(settings.OTEL_TRACES_SAMPLER_ARG);
    // A remote parent's trace id is the caller's to choose, so a decision on it would be too: a draw.
    const drawn: Sampler = {
      shouldSample: () => ({ decision: Math.random() < ratio ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD }),
      toString: () => `RandomRatioSampler{${ratio}}`,
    };
    sampler = { sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio), remoteParentSampled: drawn, remoteParentNotSampled: drawn }) };
  }
  const tracerProvider = new NodeTracerProvider({ resource, ...sampler, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  // W3C traceparent/baggage in and out; AsyncLocalStorage carries the active span.
  tracerProvider.register();
  registerInstrumentations({
    tracerProvider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?', 1)[0]!),
        redactedQueryParams: REDACTED_QUERY,
        redactedQueryParamsServer: REDACTED_QUERY,
        // Express's matched route, read when the response ends, named as the HTTP semantic conventions
        // say; the lean routes set theirs (setHttpRoute).
        applyCustomAttributesOnSpan: (span, request) => {
          const route = expressRoute(request as ExpressRoutedRequest);
          if (route === undefined) return;
          span.setAttribute('http.route', route);
          span.updateName(`${request.method ?? 'GET'} ${route}`);
        },
      }),
      // Statements as written (placeholders), never their parameters; pool checkouts are no calls.
      new PgInstrumentation({ enhancedDatabaseReporting: false, ignoreConnectSpans: true }),
      // The command's name only: arguments are keys, tenant data, and AUTH's password.
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
      // The gateway's model providers (undici pools).
      new UndiciInstrumentation(),
    ],
  });
  const setRoute = (route: string): void => {
    const rpc = getRPCMetadata(api.context.active());
    // The instrumentation names the span METHOD route when the response ends.
    if (rpc?.type === RPCType.HTTP) rpc.route = route;
  };
  running = { api, tracer: api.trace.getTracer('flagship'), setRoute, shutdown: () => tracerProvider.shutdown() };
  return true;
}

/**
 * Names the incoming request's span by its route template (`/v1/chat/completions`,
 * `/ofrep/v1/evaluate/flags/:key`), for routes Express does not answer (libs/lean-http); never a raw
 * path. Call it inside the request's handling. Nothing when tracing is off.
 */
export function setHttpRoute(route: string): void {
  running?.setRoute(route);
}

/** Exports what is still batched and stops; for the graceful shutdown. Nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  const r = running;
  running = undefined;
  await r?.shutdown();
}

/** Whether startTracing started tracing in this process. */
export function tracingStarted(): boolean {
  return running !== undefined;
}

/**
 * A pino mixin writing the active span's `trace_id` and `span_id` into each log line, or undefined
 * when tracing is off (then the logger has no mixin at all).
 */
export function traceLogMixin(): (() => Record<string, string>) | undefined {
  const r = running;
  if (r === undefined) return undefined;
  const none = {};
  return () => {
    const ctx = r.api.trace.getSpan(r.api.context.active())?.spanContext();
    return ctx === undefined || !r.api.isSpanContextValid(ctx) ? none : { trace_id: ctx.traceId, span_id: ctx.spanId };
  };
}

/** SpanKind.CLIENT and SpanStatusCode.ERROR, as numbers: the enums would load the API. */
const CLIENT = 2;
const ERROR = 2;

/**
 * A client span of the app's own (the gateway's model call), child of the active span, or
 * undefined when tracing is off: callers skip all attribute work then.
 */
export function startClientSpan(name: string, attributes: Attributes): Span | undefined {
  return running?.tracer.startSpan(name, { kind: CLIENT, attributes });
}

/** Runs `fn` with `span` active: the spans it starts (HTTP, SQL) become its children. */
export function inSpan<T>(span: Span, fn: () => T): T {
  const api = running?.api;
  return api === undefined ? fn() : api.context.with(api.trace.setSpan(api.context.active(), span), fn);
}

/** Marks the span failed, with the semantic conventions' `error.type`. */
export function failSpan(span: Span, errorType: string, message?: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: ERROR, ...(message === undefined ? {} : { message }) });
}
