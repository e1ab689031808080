export * from './redis.factory';
export * from './redis-keys';
export * from './pubsub';
export * from './redis.module';
