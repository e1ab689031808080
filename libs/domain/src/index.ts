export * from './plans';
export * from './roles';
export * from './scopes';
export * from './product-keys';
export * from './resources';
export * from './evaluation';
export * from './ids';
export * from './model-routes';
