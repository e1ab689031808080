export * from './test-database';
export * from './test-redis';
export * from './test-app';
export * from './processes';
export * from './http';
export * from './fake-stripe';
export * from './stripe-form';
export * from './fake-secrets-manager';
