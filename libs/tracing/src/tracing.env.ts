import { str } from 'envalid';

/**
 * The OpenTelemetry settings the apps honour: the SDK's standard variables (it reads them itself),
 * named here so that each app's env schema (libs/config's commonEnv spreads this) and the chart agree
 * on them, and so that a wrong sampler name stops the start instead of tracing everything.
 */
export const tracingEnv = {
  OTEL_EXPORTER_OTLP_ENDPOINT: str({
    default: '',
    desc: 'OTLP/HTTP (JSON) collector base URL, e.g. http://otel-collector:4318 (traces go to /v1/traces); empty with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT empty = tracing off, no OpenTelemetry code loaded',
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: str({ default: '', desc: 'the full traces URL, instead of OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces' }),
  OTEL_SERVICE_NAME: str({ default: '', desc: "service.name of the spans; empty = the app's name (ai-gateway, ...)" }),
  OTEL_TRACES_SAMPLER: str({
    choices: ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'],
    default: 'parentbased_always_on',
  }),
  OTEL_TRACES_SAMPLER_ARG: str({ default: '', desc: 'the ratio (0..1) of the traceidratio samplers' }),
  OTEL_RESOURCE_ATTRIBUTES: str({ default: '', desc: 'key=value,... added to every span (deployment.environment.name=production, ...)' }),
};

/** Whether a collector is configured: only then does startTracing load anything of OpenTelemetry. */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
}
