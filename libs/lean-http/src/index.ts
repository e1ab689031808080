export * from './exchange';
export * from './buffered-metrics';
export * from './api-token';
export * from './rate-limiter';
export * from './lean-router';
export * from './lean-routes';
