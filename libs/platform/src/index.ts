export * from './platform';
