import { type DynamicModule, Module } from '@nestjs/common';
import { EvaluationBudgetReporter, platformModules } from '@flagship/service-kit';
import type { OrepServerConfig } from './env.schema';
import { ofrepPushProvider } from './push/ofrep-push.provider';
import { OrepReadiness, SnapshotReadiness } from './readiness/orep-readiness';
import { SourcesModule } from './sources/sources.module';

/**
 * orep-server: Nest runs the lifecycle, configuration, health and metrics; the evaluation paths
 * themselves are answered by the fast path in front of Express (fast-path/install-fast-path.ts, on @flagship/lean-http).
 */
@Module({})
export class AppModule {
  static forConfig(config: OrepServerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...platformModules(config, {
          serviceName: 'orep-server',
          // A flag file (or the built-in example) needs neither Postgres nor Redis.
          withoutStores: config.sourceMode !== 'postgres',
          readiness: [SnapshotReadiness],
          // Keeps async hooks off (see ServiceKitOptions.requestLogging): Nest serves only health,
          // metrics and /docs here, and /healthz, /readyz and /metrics are not access-logged anyway.
          requestLogging: false,
        }),
        SourcesModule.forConfig(config),
      ],
      providers: [SnapshotReadiness, OrepReadiness, EvaluationBudgetReporter, ofrepPushProvider],
    };
  }
}
