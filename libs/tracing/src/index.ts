// Nothing here may import OpenTelemetry at the top: apps import this lib first, tracing on or off.
export * from './express-route';
export * from './tracing.env';
export * from './tracing';
