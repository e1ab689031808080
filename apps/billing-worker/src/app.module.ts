import { type DynamicModule, Module } from '@nestjs/common';
import { platformModules } from '@flagship/service-kit';
import type { BillingWorkerConfig } from './env.schema';

@Module({})
export class AppModule {
  static forConfig(config: BillingWorkerConfig): DynamicModule {
    return { module: AppModule, imports: [...platformModules(config, { serviceName: 'billing-worker' })] };
  }
}
