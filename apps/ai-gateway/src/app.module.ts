import { type DynamicModule, Module } from '@nestjs/common';
import { platformModules } from '@flagship/service-kit';
import type { AiGatewayConfig } from './env.schema';

@Module({})
export class AppModule {
  static forConfig(config: AiGatewayConfig): DynamicModule {
    return { module: AppModule, imports: [...platformModules(config, { serviceName: 'ai-gateway' })] };
  }
}
