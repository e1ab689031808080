import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { IdempotencyInterceptor, RateLimitGuard, RequestPoliciesModule } from '@flagship/request-policies';
import { stripeSecretsFromConfig } from '@flagship/billing';
import { SecretStore } from '@flagship/config';
import type { SecretSource } from '@flagship/oauth';
import { platformModules } from '@flagship/platform';
import { EvaluationBudgetReporter } from '@flagship/flag-store';
import { AdminModule } from './admin/admin.module';
import { AuthModule } from './auth/auth.module';
import { StripeBillingModule } from './billing/stripe-billing.module';
import { AuthenticationGuard } from './auth/authentication.guard';
import { AuthorizationGuard } from './auth/authorization.guard';
import { CreditsModule } from './billing/credits.module';
import { DevIdpAccountEntity, DevIdpKeyEntity } from './dev-idp/dev-idp.entity';
import type { ManagementApiConfig } from './env.schema';
import { EnvironmentEntity } from './environments/environment.entity';
import { EnvironmentsModule } from './environments/environments.module';
import { FlagAuditEntity, FlagEntity, FlagEnvironmentEntity } from './flags/flag.entity';
import { FlagsModule } from './flags/flags.module';
import { GatewayBindingsModule } from './gateway-bindings/gateway-bindings.module';
import { CLIENT_TOKEN_FACTORY } from './oauth/client-token.adapter';
import { OAUTH_FEATURE_ENTITIES, OAuthFeatureModule } from './oauth/oauth-feature.module';
import { ProductTourEntity } from './product-tours/product-tour.entity';
import { ProductToursModule } from './product-tours/product-tours.module';
import { ProjectEntity } from './projects/project.entity';
import { ProjectsModule } from './projects/projects.module';
import { QuotasModule } from './quotas/quotas';
import { WebhooksModule } from './webhooks/webhooks.module';
import { SandboxModule } from './sandbox/sandbox.module';
import { MembershipEntity } from './tenants/membership.entity';
import { TenantsModule } from './tenants/tenants.module';
import { UsageModule } from './usage/usage.module';
import { ExperimentsModule } from './experiments/experiments.module';
import { RolloutsModule } from './rollouts/rollouts.module';
import { UserEntity } from './users/user.entity';

const ENTITIES = [
  UserEntity,
  MembershipEntity,
  DevIdpAccountEntity,
  DevIdpKeyEntity,
  ProductTourEntity,
  ProjectEntity,
  EnvironmentEntity,
  FlagEntity,
  FlagEnvironmentEntity,
  FlagAuditEntity,
];

@Module({})
export class AppModule {
  /** `secrets`: where OAUTH_SIGNING_KEY and the Stripe secrets are read (env, or AWS Secrets Manager via main.ts). */
  static forConfig(
    config: ManagementApiConfig,
    secrets: SecretSource = SecretStore.fromEnv({ OAUTH_SIGNING_KEY: config.OAUTH_SIGNING_KEY, ...stripeSecretsFromConfig(config) }),
  ): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...platformModules(config, {
          serviceName: 'management-api',
          entities: [...ENTITIES, ...OAUTH_FEATURE_ENTITIES],
          // Evaluations answer from the flags in memory through a Redis outage (rate limits uncounted,
          // changes reconciled from Postgres): the replica stays in service, /readyz says degraded.
          degradedWithout: ['redis'],
        }),
        RequestPoliciesModule.forRoot({
          limits: { free: config.RATE_LIMIT_FREE, standard: config.RATE_LIMIT_STANDARD, premium: config.RATE_LIMIT_PREMIUM },
          ipLimitPerMinute: config.RATE_LIMIT_IP_PER_MINUTE,
        }),
        QuotasModule,
        WebhooksModule,
        // In production the access-token signing key comes from the Secret or Secrets Manager, never
        // generated into Postgres (where a database dump would hand it out): without it, start-up stops.
        OAuthFeatureModule.forConfig(config, secrets, { requireConfiguredKey: config.NODE_ENV === 'production' }),
        AuthModule.forRoot(config.IDP_MODE, { imports: [], factory: CLIENT_TOKEN_FACTORY }),
        TenantsModule,
        AdminModule,
        ProductToursModule,
        ProjectsModule,
        EnvironmentsModule,
        FlagsModule,
        SandboxModule,
        CreditsModule,
        UsageModule,
        GatewayBindingsModule,
        ExperimentsModule,
        RolloutsModule,
        StripeBillingModule.forConfig(config, secrets),
      ],
      // Global guards run in this order: who is calling, may they act in this tenant, are they
      // within their rate limit (which needs the tenant's plan); then idempotency wraps the handler.
      providers: [
        { provide: APP_GUARD, useExisting: AuthenticationGuard },
        { provide: APP_GUARD, useExisting: AuthorizationGuard },
        { provide: APP_GUARD, useExisting: RateLimitGuard },
        { provide: APP_INTERCEPTOR, useExisting: IdempotencyInterceptor },
        EvaluationBudgetReporter,
      ],
    };
  }
}
