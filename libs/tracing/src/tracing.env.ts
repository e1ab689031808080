import { makeValidator, str } from 'envalid';

/**
 * The default sampler, ours: a request from outside is sampled at the ratio whatever its `traceparent`
 * says (a caller's sampled flag would let any tenant have all of its requests traced and exported),
 * while the spans inside a request follow it. The standard names keep their standard meaning.
 */
export const LOCAL_PARENT_SAMPLER = 'parentbased_local_ratio';

/** Empty (the SDK's 1) or a number from 0 to 1: the SDK would take a wrong one for 1, tracing everything. */
const samplerRatio = makeValidator<string>((input) => {
  const ratio = Number(input);
  if (input.trim() !== '' && !(ratio >= 0 && ratio <= 1)) throw new Error(`"${input}" is not a ratio from 0 to 1`);
  return input.trim();
});

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
    choices: [LOCAL_PARENT_SAMPLER, 'always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'],
    default: LOCAL_PARENT_SAMPLER,
    desc: `${LOCAL_PARENT_SAMPLER}: new traces and requests from outside at the ratio, a caller's traceparent continued but its sampled flag ignored; the standard names as the SDK defines them (parentbased_* trusts a caller's flag)`,
  }),
  OTEL_TRACES_SAMPLER_ARG: samplerRatio({ default: '', desc: `the ratio (0..1, empty = 1) of ${LOCAL_PARENT_SAMPLER} and the traceidratio samplers` }),
  OTEL_RESOURCE_ATTRIBUTES: str({ default: '', desc: 'key=value,... added to every span (deployment.environment.name=production, ...)' }),
};

/** Whether a collector is configured: only then does startTracing load anything of OpenTelemetry. */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
}
