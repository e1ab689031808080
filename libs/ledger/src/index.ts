export * from './usage-row';
export * from './usage-ledger.repository';
export * from './usage-reconciler.repository';
export * from './usage-meter.repository';
export * from './credits.repository';
export * from './usage.repository';
export * from './low-balance.repository';
export * from './ledger-durability';
