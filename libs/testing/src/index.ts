export * from './test-database';
export * from './test-redis';
export * from './test-app';
export * from './processes';
export * from './http';
export * from './tcp-proxy';
