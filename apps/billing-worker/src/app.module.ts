import { type DynamicModule, Module } from '@nestjs/common';
import { BillingRepository, type SecretReader, SqlBillingRepository, StripeApi, stripeSecretsFromConfig } from '@flagship/billing';
import { SecretStore } from '@flagship/config';
import { WebhookSecretBox } from '@flagship/service-kit';
import { platformModules } from '@flagship/platform';
import { BillingMetrics } from './billing.metrics';
import type { BillingWorkerConfig } from './env.schema';
import { BacklogMetricsJob } from './jobs/backlog-metrics.job';
import { JOB_MAX_BACKOFF_MS, JOBS } from './jobs/job';
import { JobScheduler } from './jobs/job-scheduler';
import { JobsModule } from './jobs/jobs.module';
import { portalConfigurationJob } from './jobs/portal-configuration.job';
import { stripeEventsCatchUpJob } from './jobs/stripe-events-catch-up.job';
import { usageMeterJob } from './jobs/usage-meter.job';
import { usagePricingJob } from './jobs/usage-pricing.job';
import { UsagePartitionsJob } from './jobs/usage-partitions.job';
import { UsageReconcilerJob } from './jobs/usage-reconciler.job';
import { UsageRollupsJob } from './jobs/usage-rollups.job';
import { webhookInboxJob } from './jobs/webhook-inbox.job';
import { OutboundWebhooksRepository } from './outbound-webhooks/outbound-webhooks.repository';
import { WebhookDeliveryJob } from './outbound-webhooks/webhook-delivery.job';
import { WebhookSender } from './outbound-webhooks/webhook-sender';
import { CreditsRepository, UsageMeterRepository } from '@flagship/ledger';
import { UsageMeterService } from './metering/usage-meter.service';
import { UsagePricingService } from './metering/usage-pricing.service';
import { PortalConfigurationService } from './stripe/portal-configuration.service';
import { StripeEventsCatchUpService } from './stripe/stripe-events-catch-up.service';
import { SdkStripeAccount, StripeAccount } from './stripe/stripe-account';
import { BILLING_SECRETS, STRIPE_API } from './stripe/stripe.tokens';
import { BillingSyncRepository, SqlBillingSyncRepository } from './webhooks/billing-sync.repository';
import { BillingSyncService } from './webhooks/billing-sync.service';
import { CreditPurchasesRepository, SqlCreditPurchasesRepository } from './webhooks/credit-purchases.repository';
import { CreditReversalsService } from './webhooks/credit-reversals.service';
import { StripeEventProcessor } from './webhooks/stripe-event.processor';
import { SqlStripeEventsRepository, StripeEventsRepository } from './webhooks/stripe-events.repository';
import { StripeWebhookController } from './webhooks/stripe-webhook.controller';
import { WebhookSignatureVerifier } from './webhooks/webhook-signature';

/** Paths whose body the worker needs as raw bytes (see main.ts and startService's rawBodyPaths). */
export const RAW_BODY_PATHS = ['/webhooks/stripe'];

@Module({})
export class AppModule {
  /** `secrets`: the Stripe key, webhook secrets and price ids (env, or AWS Secrets Manager via main.ts). */
  static forConfig(config: BillingWorkerConfig, secrets: SecretReader = SecretStore.fromEnv(stripeSecretsFromConfig(config))): DynamicModule {
    return {
      module: AppModule,
      imports: [...platformModules(config, { serviceName: 'billing-worker' }), JobsModule],
      controllers: [StripeWebhookController],
      providers: [
        { provide: BILLING_SECRETS, useValue: secrets },
        {
          provide: STRIPE_API,
          useValue: new StripeApi(secrets, { apiBase: config.STRIPE_API_BASE, timeoutMs: config.STRIPE_TIMEOUT_MS, maxNetworkRetries: config.STRIPE_MAX_NETWORK_RETRIES }),
        },
        { provide: StripeAccount, useClass: SdkStripeAccount },
        BillingMetrics,
        { provide: BillingRepository, useClass: SqlBillingRepository },
        { provide: BillingSyncRepository, useClass: SqlBillingSyncRepository },
        CreditsRepository,
        { provide: CreditPurchasesRepository, useClass: SqlCreditPurchasesRepository },
        CreditReversalsService,
        BillingSyncService,
        { provide: StripeEventsRepository, useClass: SqlStripeEventsRepository },
        StripeEventProcessor,
        WebhookSignatureVerifier,
        UsageMeterRepository,
        UsageMeterService,
        UsagePricingService,
        StripeEventsCatchUpService,
        PortalConfigurationService,
        BacklogMetricsJob,
        OutboundWebhooksRepository,
        {
          provide: WebhookDeliveryJob,
          inject: [OutboundWebhooksRepository],
          // Without WEBHOOK_SECRETS_KEY nothing can be signed (management-api then creates no webhooks
          // either): no job, and a worker that starts, as every other optional secret lets it.
          useFactory: (repo: OutboundWebhooksRepository) =>
            config.WEBHOOK_SECRETS_KEY === ''
              ? null
              : new WebhookDeliveryJob(repo, new WebhookSender({ allowPrivate: config.WEBHOOKS_ALLOW_PRIVATE_URLS, timeoutMs: config.WEBHOOK_TIMEOUT_MS }), new WebhookSecretBox(config.WEBHOOK_SECRETS_KEY), {
                pollMs: config.WEBHOOK_POLL_MS,
                batchSize: config.WEBHOOK_BATCH_SIZE,
                // Past the longest attempt, so a lease never runs out under a send still in flight.
                leaseMs: config.WEBHOOK_TIMEOUT_MS * 3,
                baseMs: config.WEBHOOK_RETRY_BASE_MS,
                maxDelayMs: config.WEBHOOK_RETRY_MAX_MS,
                windowMs: config.WEBHOOK_RETRY_WINDOW_S * 1000,
                retentionMs: config.WEBHOOK_LOG_RETENTION_DAYS * 86_400_000,
              }),
        },
        {
          provide: JOBS,
          // The reconciler, the ledger's partitions, the rollups' compaction and the backlog gauges always; the Stripe jobs unless BILLING_JOBS_ENABLED=false (webhooks are then only stored).
          useFactory: (
            reconciler: UsageReconcilerJob,
            rollups: UsageRollupsJob,
            backlog: BacklogMetricsJob,
            processor: StripeEventProcessor,
            meter: UsageMeterService,
            catchUp: StripeEventsCatchUpService,
            portal: PortalConfigurationService,
            pricing: UsagePricingService,
            webhooks: WebhookDeliveryJob | null,
            partitions: UsagePartitionsJob,
          ) => [
            reconciler,
            partitions,
            rollups,
            backlog,
            ...(webhooks ? [webhooks] : []),
            ...(config.BILLING_JOBS_ENABLED
              ? [
                  webhookInboxJob(processor, config),
                  usageMeterJob(meter, config),
                  stripeEventsCatchUpJob(catchUp, config),
                  portalConfigurationJob(portal, config),
                  usagePricingJob(pricing, config),
                ]
              : []),
          ],
          inject: [UsageReconcilerJob, UsageRollupsJob, BacklogMetricsJob, StripeEventProcessor, UsageMeterService, StripeEventsCatchUpService, PortalConfigurationService, UsagePricingService, WebhookDeliveryJob, UsagePartitionsJob],
        },
        { provide: JOB_MAX_BACKOFF_MS, useValue: config.STRIPE_BACKOFF_MAX_MS },
        JobScheduler,
      ],
    };
  }
}
