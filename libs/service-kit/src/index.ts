export * from './service-kit.module';
export * from './bootstrap';
export * from './request-id';
export * from './metrics';
export * from './readiness';
export * from './openapi';
export * from './platform';
export * from './test-app';
