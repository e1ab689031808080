import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import type Redis from 'ioredis';
import { EvaluationRecorder, EvaluationsRepository, FlagStoreRepository } from '@flagship/flag-store';
import { HttpMetrics } from '@flagship/service-kit';
import { REDIS, REDIS_KEYS, type RedisKeys, RedisPubSub } from '@flagship/redis';
import type { OrepServerConfig } from '../env.schema';
import { EmbeddedFlagSource } from './embedded-flag.source';
import { FileFlagSource } from './file-flag.source';
import { FLAG_SOURCE } from './flag-source';
import { PostgresFlagSource } from './postgres-flag.source';

/** Provides the one FlagSource the configuration asks for (env.schema.ts decides which). */
@Module({})
export class SourcesModule {
  static forConfig(config: OrepServerConfig): DynamicModule {
    const providers: Provider[] = [];
    switch (config.sourceMode) {
      case 'file':
        providers.push({
          provide: FLAG_SOURCE,
          useFactory: () =>
            new FileFlagSource({
              path: config.OREP_FLAGS_FILE,
              tenantId: config.OREP_TENANT_ID || undefined,
              bounds: { maxFlagBytes: config.OREP_FLAG_MAX_BYTES, maxSetBytes: config.OREP_FLAG_SET_MAX_BYTES },
            }),
        });
        break;
      case 'embedded':
        providers.push({ provide: FLAG_SOURCE, useClass: EmbeddedFlagSource });
        break;
      case 'postgres':
        providers.push(FlagStoreRepository, EvaluationsRepository, {
          // One tenant-environment's flags: a window never holds more than its flags (the bound is for management-api's many tenants).
          provide: EvaluationRecorder,
          inject: [EvaluationsRepository, HttpMetrics],
          useFactory: (writes: EvaluationsRepository, metrics: HttpMetrics) => new EvaluationRecorder(writes, { maxPerFlush: 10_000, registry: [metrics.registry] }),
        }, {
          provide: FLAG_SOURCE,
          inject: [FlagStoreRepository, REDIS, REDIS_KEYS, EvaluationRecorder],
          // A subscriber connection of the source's own, closed with it at shutdown.
          useFactory: (repository: FlagStoreRepository, redis: Redis, keys: RedisKeys, recorder: EvaluationRecorder) =>
            new PostgresFlagSource(
              repository,
              new RedisPubSub(redis, keys, config.REDIS_URL, 'orep-server-flags'),
              {
                tenantId: config.OREP_TENANT_ID,
                environment: config.OREP_ENVIRONMENT,
                reconcileMs: config.OREP_RECONCILE_S * 1000,
                maxFlagBytes: config.OREP_FLAG_MAX_BYTES,
                maxSetBytes: config.OREP_FLAG_SET_MAX_BYTES,
              },
              recorder,
            ),
        });
        break;
    }
    return { module: SourcesModule, providers, exports: [FLAG_SOURCE] };
  }
}
