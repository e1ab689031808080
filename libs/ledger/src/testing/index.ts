export * from './ledger.fixture';
export * from './usage-ledger.repository.fake';
