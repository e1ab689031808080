import { type DynamicModule, Module } from '@nestjs/common';
import { SecretStore } from '@flagship/config';
import { platformModules } from '@flagship/platform';
import { EvaluationBudgetReporter } from '@flagship/flag-store';
import type { OrepServerConfig } from './env.schema';
import { OREP_SECRETS, orepKeysHolderFactory, type SecretSource } from './keys/orep-keys.holder';
import { ofrepPushHolderFactory } from './push/ofrep-push.holder';
import { OrepReadiness, FlagsLoadedReadiness } from './readiness/orep-readiness';
import { SourcesModule } from './sources/sources.module';

/**
 * orep-server: Nest runs the lifecycle, configuration, health and metrics; the evaluation paths
 * themselves are answered by the fast path in front of Express (fast-path/install-fast-path.ts, on @flagship/lean-http).
 */
@Module({})
export class AppModule {
  /** `secrets`: where the client-side keys are read (main.ts: the SecretStore, so a Secrets Manager rotation applies). */
  static forConfig(config: OrepServerConfig, secrets: SecretSource = SecretStore.fromEnv({ OREP_CLIENT_KEYS: config.OREP_CLIENT_KEYS, OREP_MOBILE_KEYS: config.OREP_MOBILE_KEYS })): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...platformModules(config, {
          serviceName: 'orep-server',
          // A flag file (or the built-in example) needs neither Postgres nor Redis.
          withoutStores: config.sourceMode !== 'postgres',
          readiness: [FlagsLoadedReadiness],
          // Keeps async hooks off (see ServiceKitOptions.requestLogging): Nest serves only health,
          // metrics and /docs here, and /healthz, /readyz and /metrics are not access-logged anyway.
          requestLogging: false,
        }),
        SourcesModule.forConfig(config),
      ],
      providers: [{ provide: OREP_SECRETS, useValue: secrets }, orepKeysHolderFactory, FlagsLoadedReadiness, OrepReadiness, EvaluationBudgetReporter, ofrepPushHolderFactory],
    };
  }
}
