import type { DynamicModule, Type } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { databaseTlsSettings, PersistenceModule, PostgresReadiness, SHARED_ENTITIES } from '@flagship/persistence';
import { RedisModule, RedisReadiness } from '@flagship/redis';
import { type CommonConfig, type ReadinessCheck, ServiceKitModule } from '@flagship/service-kit';
import { DatabaseCaMetrics } from './database-ca.metrics';

export interface PlatformOptions {
  serviceName: string;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities?: Function[];
  /** Postgres and Redis are checked by default; an app may replace or add checks. */
  readiness?: Array<Type<ReadinessCheck>>;
  /** See ServiceKitOptions.degradedWithout. */
  degradedWithout?: readonly string[];
  /** Leave out Postgres and Redis (orep-server serving from a file). */
  withoutStores?: boolean;
  /** See ServiceKitOptions.requestLogging. */
  requestLogging?: boolean;
}

/** The modules every app imports: service kit, Postgres, Redis, and its validated config. */
export function platformModules(config: CommonConfig, options: PlatformOptions): DynamicModule[] {
  const stores = options.withoutStores
    ? []
    : [
        PersistenceModule.forRoot({
          url: config.DATABASE_URL,
          tls: databaseTlsSettings(config),
          poolSize: config.DATABASE_POOL_SIZE,
          queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
          entities: [...SHARED_ENTITIES, ...(options.entities ?? [])],
          applicationName: options.serviceName,
        }),
        RedisModule.forRoot({ url: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX, name: options.serviceName }),
        { module: DatabaseCaMetricsModule, providers: [DatabaseCaMetrics] },
      ];
  return [
    ServiceKitModule.forRoot({
      serviceName: options.serviceName,
      logLevel: config.LOG_LEVEL,
      readiness: options.readiness ?? (options.withoutStores ? [] : [PostgresReadiness, RedisReadiness]),
      defaultMetrics: config.NODE_ENV !== 'test',
      requestLogging: options.requestLogging,
      degradedWithout: options.degradedWithout,
    }),
    ...stores,
    { module: ConfigHolderModule, global: true, providers: [{ provide: APP_CONFIG, useValue: config }], exports: [APP_CONFIG] },
  ];
}

class ConfigHolderModule {}

/** The Postgres CA bundle's expiry gauge, in every app that connects to Postgres. */
class DatabaseCaMetricsModule {}
