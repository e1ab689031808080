import { startTracing, tracingStarted, traceLogMixin, startClientSpan } from './tracing';
import { tracingConfigured } from './tracing.env';

describe('startTracing', () => {
  it('without an OTLP endpoint starts nothing: no mixin, no spans', () => {
    expect(startTracing('test', { OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBe(false);
    expect(startTracing('test', { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' })).toBe(false);
    expect(tracingStarted()).toBe(false);
    expect(traceLogMixin()).toBeUndefined();
    expect(startClientSpan('chat m', { 'gen_ai.operation.name': 'chat' })).toBeUndefined();
  });

  it('either endpoint variable turns it on', () => {
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
  });

  it('refuses an unknown sampler before loading anything, instead of tracing everything', () => {
    expect(() => startTracing('test', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(tracingStarted()).toBe(false);
  });

  it('refuses a sampler ratio outside 0..1, which the SDK would take for 1 (everything traced)', () => {
    for (const ratio of ['2', '-0.1', 'ten']) {
      expect(() => startTracing('test', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER_ARG: ratio })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    }
    expect(tracingStarted()).toBe(false);
  });
});
