import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

/**
 * A spec file's own database and two pg pools on it (as two gateway replicas would have), opened
 * before its tests and closed after: `pools()` answers them once open.
 */
export function useTwoPools(poolSize = 4): () => DataSource[] {
  let db: TestDatabase | undefined;
  let replicas: DataSource[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
    replicas = [createDataSource({ url: db.url, poolSize }), createDataSource({ url: db.url, poolSize })];
    for (const ds of replicas) await ds.initialize();
  });
  afterAll(async () => {
    for (const ds of replicas) if (ds.isInitialized) await ds.destroy();
    await db?.drop();
  });
  return () => replicas;
}
