export * from './data-source';
export * from './transaction';
export * from './migrations';
export * from './entities/tenant.entity';
export * from './persistence.module';
export * from './postgres.readiness';
export * from './tokens';
