export * from './admission';
export * from './replay-log';
export * from './sse-hub';
