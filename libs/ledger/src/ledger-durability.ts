import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { type DatabaseTlsSettings, openDataSource } from '@flagship/persistence';

/**
 * Connections of their own for the ledger writes that must be on disk before the gateway goes on,
 * with Postgres' synchronous_commit on, beside the app's pool, whose ledger statements commit
 * asynchronously (see UsageLedgerRepository: the "upstream called" stamp and the flush barrier run
 * here). A few connections suffice: each statement here is batched per event-loop turn and holds no
 * lock another request waits for (a request's own ledger row, a row per connection).
 */
@Injectable()
export class LedgerDurableConnections implements OnApplicationShutdown {
  readonly ds: DataSource;

  private constructor(ds: DataSource) {
    this.ds = ds;
  }

  /**
   * `url` and `tls`: the app's DATABASE_URL and TLS settings, as its pool has them; synchronous_commit
   * is set on for these connections whatever the URL says.
   */
  static async open(url: string, tls: DatabaseTlsSettings, poolSize = 4): Promise<LedgerDurableConnections> {
    const u = new URL(url);
    const options = (u.searchParams.get('options') ?? '').replace(/-c\s*synchronous_commit=\S+/g, '').trim();
    u.searchParams.set('options', `${options} -c synchronous_commit=on`.trim());
    const ds = await openDataSource({ url: u.toString(), tls, poolSize, applicationName: 'flagship-ledger-durable' });
    return new LedgerDurableConnections(ds);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.ds.isInitialized) await this.ds.destroy();
  }
}
