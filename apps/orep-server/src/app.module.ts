import { type DynamicModule, Module } from '@nestjs/common';
import { platformModules } from '@flagship/service-kit';
import type { OrepServerConfig } from './env.schema';

@Module({})
export class AppModule {
  static forConfig(config: OrepServerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [...platformModules(config, { serviceName: 'orep-server', withoutStores: config.OREP_FLAGS_FILE !== '' })],
    };
  }
}
