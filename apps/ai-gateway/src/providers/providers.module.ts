import { type DynamicModule, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { OpenAiCompatibleProviders } from './openai-compatible.providers';
import type { ProviderLayerOptions } from './provider.env';

/** Injection token of the gateway's ProviderClient (provider.types.ts). */
export const PROVIDER_CLIENT = Symbol('PROVIDER_CLIENT');

class ProvidersShutdown implements OnApplicationShutdown {
  constructor(@Inject(PROVIDER_CLIENT) private readonly providers: OpenAiCompatibleProviders) {}

  async onApplicationShutdown(): Promise<void> {
    await this.providers.close();
  }
}

/**
 * The provider layer for the gateway's pipeline: `ProvidersModule.forRoot(providerOptionsFromEnv(config, secrets))`.
 * The upstreams' model lists are read once before the app takes traffic (failures are logged, not fatal).
 */
@Module({})
export class ProvidersModule {
  static forRoot(options: ProviderLayerOptions): DynamicModule {
    const logger = new Logger('providers');
    return {
      module: ProvidersModule,
      providers: [
        {
          provide: PROVIDER_CLIENT,
          useFactory: async (): Promise<OpenAiCompatibleProviders> => {
            const client = new OpenAiCompatibleProviders({
              onError: (message, err) => logger.warn(`${message}: ${err instanceof Error ? err.message : String(err)}`),
              ...options,
            });
            await client.start();
            return client;
          },
        },
        ProvidersShutdown,
      ],
      exports: [PROVIDER_CLIENT],
    };
  }
}
