export * from './flag-store.repository';
export * from './flag-store';
export * from './evaluation-budget.reporter';
export * from './evaluation-recorder';
