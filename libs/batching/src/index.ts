export * from './turn-batcher';
export * from './coalescer';
