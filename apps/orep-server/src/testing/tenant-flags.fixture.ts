import { once } from 'node:events';
import type Redis from 'ioredis';
import { Client } from 'pg';
import { CHANNELS, createRedis, RedisKeys } from '@flagship/redis';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { createTestEnvironment, http, waitFor, type TestEnvironment, writeNumberFlag } from '@flagship/testing';
import { AppModule } from '../app.module';
import { loadOrepServerConfig } from '../env.schema';
import { installFastPath } from '../fast-path/install-fast-path';
import type { SecretSource } from '../keys/orep-keys.holder';

/**
 * One tenant's production flags in a test file's own database, changed with SQL and announced on
 * Redis exactly as management-api announces them, and orep-server apps serving that tenant (Postgres
 * mode) started in this process; all of them closed by `close`.
 */
export class TenantFlagsFixture {
  private readonly apps: RunningApp[] = [];
  private readonly channel: string;

  private constructor(
    readonly te: TestEnvironment,
    readonly db: Client,
    private readonly publisher: Redis,
    readonly tenantId: string,
  ) {
    this.channel = new RedisKeys(te.redis.prefix).channel(CHANNELS.flagChanged.name);
  }

  static async start(tenantId: string): Promise<TenantFlagsFixture> {
    const te = await createTestEnvironment();
    const db = new Client({ connectionString: te.db.url });
    await db.connect();
    await db.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'Tenant', 'owner@example.com')`, [tenantId]);
    await db.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production')`, [tenantId]);
    const publisher = createRedis({ url: te.env['REDIS_URL']!, name: 'test-publisher' });
    // Commands are not queued before the connection is up (enableOfflineQueue is off).
    if (publisher.status !== 'ready') await once(publisher, 'ready');
    return new TenantFlagsFixture(te, db, publisher, tenantId);
  }

  /** orep-server for the tenant with `env` over the test environment's; `secrets` as main.ts passes its SecretStore. */
  async startOrep(env: NodeJS.ProcessEnv, secrets?: SecretSource): Promise<RunningApp> {
    const config = loadOrepServerConfig({ ...this.te.env, OREP_TENANT_ID: this.tenantId, ...env });
    const app = await startTestApp(AppModule.forConfig(config, secrets), installFastPath);
    this.apps.push(app);
    return app;
  }

  /** Until `app` hears the change feed, so that nothing announced from now on is missed. */
  subscribed(app: RunningApp): Promise<unknown> {
    return waitFor(async () => (await http(`${app.metricsUrl}/readyz`)).body.details?.snapshot?.subscriber === 'ready', 10000, 20);
  }

  /** Writes the number flag `key` with `value` in production, and announces it unless told not to. */
  async writeNumberFlag(key: string, value: number, announce = true): Promise<void> {
    await writeNumberFlag(this.db, this.tenantId, key, value);
    if (announce) await this.announce(key);
  }

  announce(key: string): Promise<number> {
    return this.publisher.publish(this.channel, JSON.stringify({ tenantId: this.tenantId, environment: 'production', flagKey: key, version: 1 }));
  }

  async close(): Promise<void> {
    for (const app of this.apps) await app.close().catch(() => undefined);
    this.publisher.disconnect();
    await this.db.end();
    await this.te.teardown();
  }
}
