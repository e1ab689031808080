import { type DynamicModule, Module } from '@nestjs/common';
import { platformModules } from '@flagship/service-kit';
import type { BillingWorkerConfig } from './env.schema';
import { JobsModule } from './jobs/jobs.module';

@Module({})
export class AppModule {
  static forConfig(config: BillingWorkerConfig): DynamicModule {
    return { module: AppModule, imports: [...platformModules(config, { serviceName: 'billing-worker' }), JobsModule] };
  }
}
