import { type DynamicModule, Global, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { openDataSource, type DataSourceOptions } from './data-source';
import { pgConnection } from './database-tls';
import { PostgresReadiness } from './postgres.readiness';
import { DATA_SOURCE, DATABASE_CA_FILE } from './tokens';
import { TransactionRunner } from './transaction';

@Injectable()
class DataSourceCloser implements OnApplicationShutdown {
  constructor(@Inject(DATA_SOURCE) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/**
 * Provides the app's DataSource under DATA_SOURCE, and the TransactionRunner services open transactions with. Start-up needs Postgres once (TypeORM reads the
 * server version); after that the pool reconnects by itself and /readyz reports an outage.
 */
@Global()
@Module({})
export class PersistenceModule {
  static forRoot(options: DataSourceOptions): DynamicModule {
    // Bad TLS settings fail here, while main.ts builds its modules (one line from runMain), not inside
    // Nest's start; the DataSource is made from this same decision (its CA bundle read once).
    const connection = pgConnection(options.url, options.tls);
    return {
      module: PersistenceModule,
      providers: [
        {
          provide: DATA_SOURCE,
          useFactory: () => openDataSource(options, connection),
        },
        { provide: DATABASE_CA_FILE, useValue: connection.caFile ?? null },
        DataSourceCloser,
        PostgresReadiness,
        TransactionRunner,
      ],
      exports: [DATA_SOURCE, DATABASE_CA_FILE, PostgresReadiness, TransactionRunner],
    };
  }
}
