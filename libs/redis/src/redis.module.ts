import { type DynamicModule, Global, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { type PubSub, RedisPubSub } from './pubsub';
import { createRedis, pingRedis } from './redis.factory';
import { RedisKeys } from './redis-keys';

export const REDIS = Symbol('REDIS');
export const REDIS_KEYS = Symbol('REDIS_KEYS');
export const PUBSUB = Symbol('PUBSUB');

export interface RedisModuleOptions {
  url: string;
  keyPrefix: string;
  name: string;
}

@Injectable()
class RedisCloser implements OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.pubsub.close();
    this.redis.disconnect();
  }
}

/** Readiness of Redis: connected and answering PING. */
@Injectable()
export class RedisReadiness {
  readonly name = 'redis';

  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  check(timeoutMs = 1000): Promise<void> {
    return pingRedis(this.redis, timeoutMs);
  }
}

@Global()
@Module({})
export class RedisModule {
  static forRoot(options: RedisModuleOptions): DynamicModule {
    return {
      module: RedisModule,
      providers: [
        { provide: REDIS, useFactory: () => createRedis({ url: options.url, name: options.name }) },
        { provide: REDIS_KEYS, useValue: new RedisKeys(options.keyPrefix) },
        {
          provide: PUBSUB,
          inject: [REDIS, REDIS_KEYS],
          useFactory: (redis: Redis, keys: RedisKeys) => new RedisPubSub(redis, keys, options.url, options.name),
        },
        RedisCloser,
        RedisReadiness,
      ],
      exports: [REDIS, REDIS_KEYS, PUBSUB, RedisReadiness],
    };
  }
}
