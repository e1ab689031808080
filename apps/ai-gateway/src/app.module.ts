import { type DynamicModule, Module } from '@nestjs/common';
import { OAuthModule } from '@flagship/oauth';
import { platformModules } from '@flagship/service-kit';
import type { AiGatewayConfig } from './env.schema';
import { GatewayPipeline } from './gateway.pipeline';
import { UsageLedgerRepository } from './ledger/usage-ledger.repository';
import { providerOptionsFromEnv, type SecretSource } from './providers/provider.env';
import { ProvidersModule } from './providers/providers.module';
import { TenantContextRepository } from './tenants/tenant-context.repository';

@Module({})
export class AppModule {
  /** `secrets`: the provider API keys (env or AWS Secrets Manager, re-read so a rotation needs no restart). */
  static forConfig(config: AiGatewayConfig, secrets: SecretSource): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...platformModules(config, { serviceName: 'ai-gateway' }),
        // Verifies only: the keys come from Postgres, revocations from Redis.
        OAuthModule.forRoot({ issuer: config.OAUTH_ISSUER, audience: config.OAUTH_AUDIENCE }),
        ProvidersModule.forRoot(providerOptionsFromEnv(config, secrets)),
      ],
      providers: [TenantContextRepository, UsageLedgerRepository, GatewayPipeline],
    };
  }
}
