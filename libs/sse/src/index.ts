export * from './admission';
export * from './coalescer';
export * from './replay-log';
export * from './sse-hub';
