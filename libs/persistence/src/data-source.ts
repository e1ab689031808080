import { DataSource, type EntitySchema, type MixedList } from 'typeorm';
import { MIGRATIONS } from './migrations';
import { TenantEntity } from './entities/tenant.entity';
import { EntitlementEntity } from './entities/entitlement.entity';
import { CreditBalanceEntity } from './entities/credit-balance.entity';

/** Entities several apps share (tenants, entitlements, credits). Apps add their own. */
export const SHARED_ENTITIES = [TenantEntity, EntitlementEntity, CreditBalanceEntity];

export interface DataSourceOptions {
  url: string;
  poolSize?: number;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities?: MixedList<Function | string | EntitySchema>;
  applicationName?: string;
}

/** One DataSource factory for every app, the migrate command and the tests. `synchronize` is never on. */
export function createDataSource(options: DataSourceOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    entities: options.entities ?? SHARED_ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    poolSize: options.poolSize ?? 10,
    extra: {
      application_name: options.applicationName ?? 'flagship',
      connectionTimeoutMillis: 2000,
      // A query that hangs (a dropped connection) must not hold a request forever.
      query_timeout: 15000,
    },
  });
}

/** Applies every pending migration; returns the names applied. */
export async function runMigrations(url: string): Promise<string[]> {
  const ds = createDataSource({ url, poolSize: 1, applicationName: 'flagship-migrate' });
  await ds.initialize();
  try {
    const applied = await ds.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}
