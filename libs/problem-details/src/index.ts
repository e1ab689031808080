export * from './problem.exception';
export * from './problem-types';
export * from './problem-details.filter';
export * from './validation';
export * from './consumes';
export * from './api-errors';
export * from './dependency-failure';
