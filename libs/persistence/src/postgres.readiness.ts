import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from './tokens';

/** Readiness of Postgres: a `SELECT 1` that must answer within the timeout. */
@Injectable()
export class PostgresReadiness {
  readonly name = 'postgres';

  constructor(@Inject(DATA_SOURCE) private readonly dataSource: DataSource) {}

  async check(timeoutMs = 1000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.dataSource.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}
