import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '@flagship/config';
import { AccessTokenVerifier } from '@flagship/oauth';
import { PUBSUB, type PubSub, REDIS, REDIS_KEYS, type RedisKeys } from '@flagship/redis';
import { RateLimitService } from '@flagship/request-policies';
import { HttpMetrics } from '@flagship/service-kit';
import type { AiGatewayConfig } from './env.schema';
import { GatewayHandler } from './gateway.handler';
import { GatewayMetrics } from './gateway.metrics';
import { UsageLedgerRepository } from './ledger/usage-ledger.repository';
import { EntitlementStep } from './pipeline/entitlement.step';
import { ProductKeyStep } from './pipeline/product-key.step';
import { ProviderCallStep } from './pipeline/provider-call.step';
import { ProviderPermissionStep } from './pipeline/provider-permission.step';
import { RateLimitStep } from './pipeline/rate-limit.step';
import { ReservationStep } from './pipeline/reservation.step';
import { SettleStep } from './pipeline/settle.step';
import { TenantStep } from './pipeline/tenant.step';
import { TokenStep } from './pipeline/token.step';
import type { ProviderClient, ProviderKey } from './providers/provider.types';
import { PROVIDER_CLIENT } from './providers/providers.module';
import { TenantContextRepository } from './tenants/tenant-context.repository';

/** The pipeline's steps, built once from the app's config and stores, and their lifecycle. */
@Injectable()
export class GatewayPipeline implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  readonly handler: GatewayHandler;
  private readonly tenantStep: TenantStep;
  private readonly settleStep: SettleStep;
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    @Inject(APP_CONFIG) config: AiGatewayConfig,
    verifier: AccessTokenVerifier,
    tenants: TenantContextRepository,
    ledger: UsageLedgerRepository,
    @Inject(REDIS) redis: Redis,
    @Inject(REDIS_KEYS) keys: RedisKeys,
    @Inject(PUBSUB) private readonly pubsub: PubSub,
    @Inject(PROVIDER_CLIENT) private readonly providers: ProviderClient,
    httpMetrics: HttpMetrics,
    rateLimits: RateLimitService,
  ) {
    this.tenantStep = new TenantStep(tenants, config.GATEWAY_TENANT_CACHE_MS);
    this.settleStep = new SettleStep(ledger, config.GATEWAY_SETTLE_GATHER_MS);
    this.handler = new GatewayHandler(
      {
        token: new TokenStep(verifier),
        productKey: new ProductKeyStep({ own: config.PRODUCT_KEY_OWN, internal: config.internalProductKeys, legacy: config.legacyProductKeys }),
        tenant: this.tenantStep,
        entitlement: new EntitlementStep(config.PRODUCT_KEY_OWN),
        providerPermission: new ProviderPermissionStep({
          defaultProvider: config.PROVIDER_DEFAULT as ProviderKey,
          hostedProducts: config.hostedProducts,
          hostedEmergency: config.PROVIDER_HOSTED_EMERGENCY,
        }),
        rateLimit: new RateLimitStep(
          redis,
          keys,
          { requestsPerMinute: config.GATEWAY_RATE_LIMIT_RPM, tokensPerMinute: config.GATEWAY_RATE_LIMIT_TPM },
          { limiter: rateLimits, perPlan: config.tenantRateLimits },
        ),
        reservation: new ReservationStep(ledger),
        providerCall: new ProviderCallStep(providers),
        settle: this.settleStep,
      },
      providers,
      new GatewayMetrics(httpMetrics.registry),
      { models: config.models, defaultMaxOutputTokens: config.GATEWAY_DEFAULT_MAX_OUTPUT_TOKENS, imageTokens: config.GATEWAY_IMAGE_TOKENS },
    );
  }

  async onModuleInit(): Promise<void> {
    this.unsubscribe = await this.tenantStep.listen(this.pubsub);
  }

  /** Before any module's shutdown hook: settlements still being written finish while the Postgres pool is open. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.unsubscribe?.().catch(() => undefined);
    await this.settleStep.drain();
  }

  /** Requests still in flight when the server stopped accepting settle here (or are left pending for the reconciler). */
  async onApplicationShutdown(): Promise<void> {
    await this.settleStep.drain();
  }

  /** For tests: every settlement handed in so far is written. */
  drain(): Promise<void> {
    return this.settleStep.drain();
  }
}
