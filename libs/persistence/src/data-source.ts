import { DataSource, type EntitySchema, type MixedList } from 'typeorm';
import { MIGRATIONS } from './migrations';
import { explainConnectError, pgConnection, type DatabaseTlsSettings, type PgConnection } from './database-tls';
import { TenantEntity } from './entities/tenant.entity';
import { EntitlementEntity } from './entities/entitlement.entity';

/** Entities several apps share (tenants, entitlements). Apps add their own; the money tables belong to @flagship/ledger. */
export const SHARED_ENTITIES = [TenantEntity, EntitlementEntity];

export interface DataSourceOptions {
  url: string;
  poolSize?: number;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities?: MixedList<Function | string | EntitySchema>;
  applicationName?: string;
  /**
   * Longest a statement may run (Postgres' statement_timeout) and, a second more, how long the
   * client waits for any answer (a server gone silent); 0 = no limit, for migrations. Default 5 s:
   * a request must fail fast (503) while the database is unreachable, not hang.
   */
  queryTimeoutMs?: number;
  /** DATABASE_SSL_MODE and DATABASE_SSL_CA_FILE (see pgConnection); unset, the URL's sslmode decides. */
  tls?: DatabaseTlsSettings;
}

export const DEFAULT_QUERY_TIMEOUT_MS = 5000;

/**
 * One DataSource factory for every app, the migrate command and the tests. `synchronize` is never on.
 * Throws a ConfigError at once for TLS settings it cannot honour (see pgConnection). `connection`:
 * what pgConnection already decided for these options, so its CA bundle is not read again.
 */
export function createDataSource(options: DataSourceOptions, connection: PgConnection = pgConnection(options.url, options.tls)): DataSource {
  return new DataSource({
    type: 'postgres',
    url: connection.url,
    entities: options.entities ?? SHARED_ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    poolSize: options.poolSize ?? 10,
    extra: {
      application_name: options.applicationName ?? 'flagship',
      // pg's own TLS options (TypeORM's `ssl` is typed for servers, without checkServerIdentity); never
      // undefined, which would let pg read PGSSLMODE behind the settings' back.
      ssl: connection.ssl,
      // Also bounds the wait for a free connection when the pool is exhausted (pg-pool).
      connectionTimeoutMillis: 2000,
      // Notices a peer that vanished without closing the connection.
      keepAlive: true,
      ...timeouts(options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS),
    },
  });
}

function timeouts(ms: number): Record<string, number> {
  if (ms <= 0) return {};
  // statement_timeout makes the server give up (and free its locks); query_timeout makes the client
  // give up on a server that no longer answers at all.
  return { statement_timeout: ms, query_timeout: ms + 1000 };
}

/** The advisory lock every migration run of this schema takes (any constant; it names nothing else here). */
const MIGRATION_LOCK_KEY = '7046120311';

/** createDataSource, then initialize(); a connection refused for TLS reasons says which mode and CAs were tried. */
export async function openDataSource(options: DataSourceOptions, connection: PgConnection = pgConnection(options.url, options.tls)): Promise<DataSource> {
  const ds = createDataSource(options, connection);
  try {
    await ds.initialize();
  } catch (err) {
    throw explainConnectError(err, connection);
  }
  return ds;
}

/** Applies every pending migration; returns the names applied. */
export async function runMigrations(url: string, tls?: DatabaseTlsSettings): Promise<string[]> {
  // No statement timeout: building an index on a big table may take minutes. Two connections: one
  // holds the lock below, the other runs the migrations.
  const ds = await openDataSource({ url, tls, poolSize: 2, applicationName: 'flagship-migrate', queryTimeoutMs: 0 });
  const lock = ds.createQueryRunner();
  try {
    await lock.connect();
    // Two runs at once (two releases' Jobs, a plain Job applied twice, a Job and `npm start`) take
    // turns: the second waits, then finds nothing left to apply. Without it both read the same
    // pending list and the second fails halfway (a table that already exists). The wait is bounded
    // by the session's lock_timeout when one is set (the chart's PGOPTIONS), as any lock wait is.
    // Polled, not waited for in one statement: a statement waiting holds a snapshot, and a migration
    // building an index CONCURRENTLY (1763905000000) waits for every snapshot older than its own, so
    // the first run would wait for the second and the second for the first, forever.
    const [{ timeoutMs }]: Array<{ timeoutMs: number }> = await lock.query(
      `SELECT (EXTRACT(EPOCH FROM current_setting('lock_timeout')::interval) * 1000)::float8 AS "timeoutMs"`,
    );
    const started = Date.now();
    while (!(await lock.query('SELECT pg_try_advisory_lock($1) AS got', [MIGRATION_LOCK_KEY]))[0].got) {
      if (timeoutMs > 0 && Date.now() - started >= timeoutMs) throw new Error('canceling statement due to lock timeout (another run of the migrations holds their lock)');
      await new Promise((r) => setTimeout(r, 200));
    }
    try {
      const applied = await ds.runMigrations({ transaction: 'each' });
      return applied.map((m) => m.name);
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await lock.release();
    await ds.destroy();
  }
}
