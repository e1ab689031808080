export * from './flag-store.repository';
export * from './flag-store';
