import { type DynamicModule, Module } from '@nestjs/common';
import { platformModules } from '@flagship/service-kit';
import type { ManagementApiConfig } from './env.schema';

@Module({})
export class AppModule {
  static forConfig(config: ManagementApiConfig): DynamicModule {
    return { module: AppModule, imports: [...platformModules(config, { serviceName: 'management-api' })] };
  }
}
