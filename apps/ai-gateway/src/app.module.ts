import { type DynamicModule, Module } from '@nestjs/common';
import { OAuthModule } from '@flagship/oauth';
import { databaseTlsSettings, PostgresReadiness } from '@flagship/persistence';
import { HttpMetrics } from '@flagship/service-kit';
import { RedisReadiness } from '@flagship/redis';
import { RequestPoliciesModule } from '@flagship/request-policies';
import { platformModules } from '@flagship/platform';
import type { AiGatewayConfig } from './env.schema';
import { GatewayPipeline, GatewayReadiness, MEDIA_FETCHER } from './gateway.pipeline';
import { type HostResolver, MediaFetcher } from './media/media-fetcher';
import { LedgerDurableConnections, UsageLedgerRepository } from '@flagship/ledger';
import { providerOptionsFromEnv, type SecretSource } from './providers/provider.env';
import { ProvidersModule } from './providers/providers.module';
import { TenantContextRepository } from './tenants/tenant-context.repository';
import { EvaluationRecorder, EvaluationsRepository, FlagStore, FlagStoreRepository } from '@flagship/flag-store';
import { PUBSUB, type PubSub } from '@flagship/redis';
import { GatewayBindingsRepository } from './bindings/gateway-bindings.repository';
import { FeedbackRepository } from './feedback/feedback.repository';

/**
 * The flag store of bound routes' flags: one tenant-environment per tenant with a binding, each
 * compared with Postgres this often (announcements make a change immediate; this heals lost ones).
 */
const FLAG_RECONCILE_MS = 30_000;
/** Tenant-environments held, and the bytes of their flags together, before the least recently used go. */
const FLAG_SETS_HELD = 10_000;
const FLAG_BYTES_HELD = 256 * 1024 * 1024;

/** What tests replace of the outside world the gateway reaches itself: the image hosts' names and certificates. */
export interface GatewayOutside {
  resolveImageHost?: HostResolver;
  imageHostCa?: string;
}

@Module({})
export class AppModule {
  /** `secrets`: the provider API keys (env or AWS Secrets Manager, re-read so a rotation needs no restart). */
  static forConfig(config: AiGatewayConfig, secrets: SecretSource, outside: GatewayOutside = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ...platformModules(
          // Asynchronous commits on the app's pool in either mode: no statement holds a tenant's balance
          // row lock through a WAL flush (see LedgerDurableConnections for what 'on' adds).
          { ...config, DATABASE_URL: withSynchronousCommit(config.DATABASE_URL, 'off') },
          {
            serviceName: 'ai-gateway',
            // Keeps async hooks off (see ServiceKitOptions.requestLogging), as orep-server does: Nest
            // serves only health and metrics here, which are not access-logged anyway, while with them
            // on every await of every /v1 request paid for the hooks.
            requestLogging: false,
            // Fails while the gateway drains for shutdown (beside Postgres and Redis).
            readiness: [PostgresReadiness, RedisReadiness, GatewayReadiness],
          },
        ),
        // Verifies only: the keys come from Postgres, revocations from Redis.
        OAuthModule.forRoot({ issuer: config.OAUTH_ISSUER, audience: config.OAUTH_AUDIENCE }),
        ProvidersModule.forRoot(providerOptionsFromEnv(config, secrets)),
        // Its limiter only (the tenant budget of RateLimitStep); no guard or interceptor is registered.
        RequestPoliciesModule.forRoot({ limits: config.tenantRateLimits }),
      ],
      providers: [
        TenantContextRepository,
        GatewayBindingsRepository,
        FeedbackRepository,
        FlagStoreRepository,
        {
          provide: FlagStore,
          inject: [FlagStoreRepository, PUBSUB],
          useFactory: (repository: FlagStoreRepository, pubsub: PubSub) =>
            new FlagStore(repository, pubsub, { name: 'GatewayFlagStore', reconcileMs: FLAG_RECONCILE_MS, maxEntries: FLAG_SETS_HELD, maxBytes: FLAG_BYTES_HELD }),
        },
        EvaluationsRepository,
        {
          // Bound flags' last evaluations (the stale-flags list): a window holds one entry per binding in use, bounded as orep-server's.
          provide: EvaluationRecorder,
          inject: [EvaluationsRepository, HttpMetrics],
          useFactory: (writes: EvaluationsRepository, metrics: HttpMetrics) => new EvaluationRecorder(writes, { maxPerFlush: 10_000, registry: [metrics.registry] }),
        },
        // 'on' (the default): the ledger writes an answer depends on are flushed to disk before it goes out.
        {
          provide: LedgerDurableConnections,
          useFactory: () => (config.GATEWAY_LEDGER_SYNCHRONOUS_COMMIT === 'on' ? LedgerDurableConnections.open(config.DATABASE_URL, databaseTlsSettings(config)) : null),
        },
        UsageLedgerRepository,
        {
          provide: MEDIA_FETCHER,
          useFactory: () =>
            new MediaFetcher({
              policy: config.mediaPolicy,
              timeoutMs: config.GATEWAY_MEDIA_FETCH_TIMEOUT_MS,
              ...(outside.resolveImageHost === undefined ? {} : { resolve: outside.resolveImageHost }),
              ...(outside.imageHostCa === undefined ? {} : { ca: outside.imageHostCa }),
            }),
        },
        GatewayPipeline,
        GatewayReadiness,
      ],
    };
  }
}

/**
 * The gateway's pool with Postgres' synchronous_commit set to `mode`, unless DATABASE_URL sets it.
 * Every request reserves and settles on its tenant's one credit_balances row; with synchronous_commit
 * on, each of those transactions would hold that row lock through its WAL flush, so one busy tenant's
 * requests queue behind each other's disk waits (figures: docs/decisions/2026-11-29-gateway-hot-path.md).
 * So the pool always commits asynchronously, and durability
 * comes from GATEWAY_LEDGER_SYNCHRONOUS_COMMIT=on's flushes on connections of their own, which hold
 * no balance lock (LedgerDurableConnections, UsageLedgerRepository.flushBarrier).
 */
export function withSynchronousCommit(url: string, mode: 'on' | 'off'): string {
  const u = new URL(url);
  const options = u.searchParams.get('options') ?? '';
  if (/synchronous_commit/.test(options)) return url; // the operator set it in DATABASE_URL: theirs wins
  u.searchParams.set('options', `${options} -c synchronous_commit=${mode}`.trim());
  return u.toString();
}
