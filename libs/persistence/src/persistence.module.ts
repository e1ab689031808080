import { type DynamicModule, Global, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { createDataSource, type DataSourceOptions } from './data-source';
import { PostgresReadiness } from './postgres.readiness';
import { DATA_SOURCE } from './tokens';
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
    return {
      module: PersistenceModule,
      providers: [
        {
          provide: DATA_SOURCE,
          useFactory: async () => {
            const ds = createDataSource(options);
            await ds.initialize();
            return ds;
          },
        },
        DataSourceCloser,
        PostgresReadiness,
        TransactionRunner,
      ],
      exports: [DATA_SOURCE, PostgresReadiness, TransactionRunner],
    };
  }
}
