export * from './redis.factory';
export * from './redis-keys';
export * from './pubsub';
export * from './channels';
export * from './redis.module';
export * from './subscribed-cache';
export * from './lua-script';
