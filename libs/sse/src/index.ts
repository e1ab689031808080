export * from './admission';
export * from './coalescer';
export * from './replay-log';
export * from './sse-hub';
export * from './sse-sink.fake';
