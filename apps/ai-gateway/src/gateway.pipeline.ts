import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { APP_CONFIG } from '@flagship/config';
import { AccessTokenVerifier } from '@flagship/oauth';
import { CHANNELS, PUBSUB, type PubSub, REDIS, REDIS_KEYS, type RedisKeys } from '@flagship/redis';
import { RateLimitService } from '@flagship/request-policies';
import { HttpMetrics, type ReadinessCheck } from '@flagship/service-kit';
import type { AiGatewayConfig } from './env.schema';
import { GatewayHandler } from './gateway.handler';
import { GatewayMetrics } from './gateway.metrics';
import { type LowBalanceCrossing, lowBalanceEvent, UsageLedgerRepository } from '@flagship/ledger';
import { MediaFetcher } from './media/media-fetcher';
import { EvaluationRecorder, FlagStore } from '@flagship/flag-store';
import { GatewayBindingsRepository } from './bindings/gateway-bindings.repository';
import { FeedbackRepository } from './feedback/feedback.repository';
import { BindingStep } from './pipeline/binding.step';
import { EntitlementStep } from './pipeline/entitlement.step';
import { MediaStep } from './pipeline/media.step';
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

/** Injection token of the gateway's MediaFetcher (AppModule makes it; tests give it their resolver). */
export const MEDIA_FETCHER = Symbol('MEDIA_FETCHER');

/** Before the process is stopped (SHUTDOWN_GRACE_MS after SIGTERM), this long is left to cut the requests still under way and settle them. */
const CUT_MARGIN_MS = 3000;

/** The pipeline's steps, built once from the app's config and stores, and their lifecycle. */
@Injectable()
export class GatewayPipeline implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  readonly handler: GatewayHandler;
  private readonly logger = new Logger('GatewayPipeline');
  private readonly graceMs: number;
  private readonly tenantStep: TenantStep;
  private readonly settleStep: SettleStep;
  private readonly bindingStep: BindingStep;

  constructor(
    @Inject(APP_CONFIG) config: AiGatewayConfig,
    verifier: AccessTokenVerifier,
    tenants: TenantContextRepository,
    ledger: UsageLedgerRepository,
    @Inject(REDIS) redis: Redis,
    @Inject(REDIS_KEYS) keys: RedisKeys,
    @Inject(PUBSUB) pubsub: PubSub,
    @Inject(PROVIDER_CLIENT) private readonly providers: ProviderClient,
    httpMetrics: HttpMetrics,
    rateLimits: RateLimitService,
    @Inject(MEDIA_FETCHER) private readonly mediaFetcher: MediaFetcher,
    bindings: GatewayBindingsRepository,
    flags: FlagStore,
    feedback: FeedbackRepository,
    recorder: EvaluationRecorder,
  ) {
    this.graceMs = config.SHUTDOWN_GRACE_MS;
    this.tenantStep = new TenantStep(tenants, config.GATEWAY_TENANT_CACHE_MS, pubsub);
    // Read at scrape time, when the handler exists.
    const metrics = new GatewayMetrics(httpMetrics.registry, () => this.handler.inFlight);
    this.settleStep = new SettleStep(ledger, {
      onCrossings: (crossings) => this.publishCrossings(pubsub, crossings),
      metrics,
      gatherMs: config.GATEWAY_SETTLE_GATHER_MS,
    });
    const providerPermission = new ProviderPermissionStep({
      defaultProvider: config.PROVIDER_DEFAULT as ProviderKey,
      hostedProducts: config.hostedProducts,
      hostedEmergency: config.PROVIDER_HOSTED_EMERGENCY,
    });
    // Held as long as tenants are: announcements (gateway-binding-changed) make a change immediate.
    this.bindingStep = new BindingStep(bindings, flags, providerPermission, pubsub, { models: config.models, ttlMs: config.GATEWAY_TENANT_CACHE_MS, recorder });
    this.handler = new GatewayHandler(
      {
        token: new TokenStep(verifier),
        productKey: new ProductKeyStep({ own: config.PRODUCT_KEY_OWN, internal: config.internalProductKeys, legacy: config.legacyProductKeys }),
        tenant: this.tenantStep,
        entitlement: new EntitlementStep(config.PRODUCT_KEY_OWN),
        providerPermission,
        binding: this.bindingStep,
        rateLimit: new RateLimitStep(
          redis,
          keys,
          { requestsPerMinute: config.GATEWAY_RATE_LIMIT_RPM, tokensPerMinute: config.GATEWAY_RATE_LIMIT_TPM },
          { limiter: rateLimits, perPlan: config.tenantRateLimits },
        ),
        reservation: new ReservationStep(ledger, config.consoleBillingUrl),
        media: new MediaStep(mediaFetcher, {
          fetchFor: config.mediaFetchProviders,
          maxFetches: config.GATEWAY_MEDIA_MAX_FETCHES,
          maxConcurrent: config.GATEWAY_MEDIA_MAX_CONCURRENT,
          timeoutMs: config.GATEWAY_MEDIA_FETCH_TIMEOUT_MS,
        }),
        providerCall: new ProviderCallStep(providers),
        settle: this.settleStep,
      },
      metrics,
      {
        models: config.models,
        defaultMaxOutputTokens: config.GATEWAY_DEFAULT_MAX_OUTPUT_TOKENS,
        imageTokens: config.GATEWAY_IMAGE_TOKENS,
        media: config.mediaPolicy,
      },
      feedback,
    );
  }

  /**
   * Each crossing's record is already committed (Postgres' low_balance_crossings is the durable
   * record); the event is for whoever listens now, so a Redis failure is logged, not retried.
   */
  private publishCrossings(pubsub: PubSub, crossings: LowBalanceCrossing[]): void {
    for (const c of crossings) {
      pubsub.publish(CHANNELS.lowBalance, lowBalanceEvent(c)).catch((err: unknown) => this.logger.warn({ err, tenantId: c.tenantId, crossingId: c.id }, 'cannot publish a low-balance crossing (it is recorded in Postgres)'));
    }
  }

  onModuleInit(): void {
    this.tenantStep.start();
    this.bindingStep.start();
  }

  /**
   * Before the server closes and before any module's shutdown hook: new requests are refused (and
   * readiness fails) while those under way finish, for up to the shutdown grace
   * (SHUTDOWN_GRACE_MS, which the chart sets above PROVIDER_TOTAL_TIMEOUT_MS) less what cutting
   * and settling the rest takes; the rest are then cut and billed, and every settlement is written
   * while the Postgres pool is open.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const cutAfterMs = Math.max(this.graceMs - CUT_MARGIN_MS, this.graceMs / 2);
    const whole = await this.handler.drain(cutAfterMs, Math.min(CUT_MARGIN_MS, this.graceMs / 4));
    if (!whole) this.logger.warn('shutdown grace ending: requests still under way were cut and billed for what they used');
    this.tenantStep.close();
    this.bindingStep.close();
    await this.settleStep.drain();
  }

  /** Requests still in flight when the server stopped accepting settle here (or are left pending for the reconciler). */
  async onApplicationShutdown(): Promise<void> {
    await this.settleStep.drain();
    await this.mediaFetcher.close();
  }

  /** For tests: every settlement handed in so far is written. */
  drain(): Promise<void> {
    return this.settleStep.drain();
  }
}

/** /readyz fails from SIGTERM on, so the load balancer stops sending while requests under way finish. */
@Injectable()
export class GatewayReadiness implements ReadinessCheck {
  readonly name = 'gateway';

  constructor(private readonly pipeline: GatewayPipeline) {}

  async check(): Promise<void> {
    if (this.pipeline.handler.isDraining) throw new Error('shutting down');
  }
}
