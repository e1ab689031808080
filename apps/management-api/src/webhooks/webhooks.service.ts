import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '@flagship/config';
import { TransactionRunner } from '@flagship/persistence';
import { ProblemException, validationProblem } from '@flagship/problem-details';
import { decodeCursor, newWebhookSecret, WebhookSecretBox } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { Quotas } from '../quotas/quotas';
import type { CreateWebhookDto } from './webhooks.dto';
import { WebhookProblems } from './webhooks.errors';
import { type Webhook, type WebhookDelivery, WebhooksRepository } from './webhooks.repository';
import { webhookUrlProblem } from './webhook-url';

export type WebhookSettings = Pick<ManagementApiConfig, 'WEBHOOKS_ALLOW_PRIVATE_URLS' | 'WEBHOOK_SECRETS_KEY'>;

const notFound = (id: string): ProblemException => new ProblemException(WebhookProblems['webhook-not-found'], `No webhook ${id} in this tenant.`);

/** A tenant's outbound webhooks: the URL rule and quota at write, the secret shown once, the log and its replay. */
@Injectable()
export class WebhooksService {
  private readonly box: WebhookSecretBox | undefined;

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly repo: WebhooksRepository,
    @Inject(Quotas) private readonly quotas: Pick<Quotas, 'reserve'>,
    @Inject(APP_CONFIG) private readonly config: WebhookSettings,
  ) {
    this.box = config.WEBHOOK_SECRETS_KEY === '' ? undefined : new WebhookSecretBox(config.WEBHOOK_SECRETS_KEY);
  }

  async create(tenantId: string, userId: string | null, dto: CreateWebhookDto): Promise<Webhook & { secret: string }> {
    const box = this.box;
    if (!box) throw new ProblemException(WebhookProblems['webhooks-unavailable'], 'Webhooks are not configured on this server (WEBHOOK_SECRETS_KEY).');
    const problem = webhookUrlProblem(dto.url, this.config.WEBHOOKS_ALLOW_PRIVATE_URLS);
    if (problem) throw validationProblem({ url: problem });
    const secret = newWebhookSecret();
    const webhook = await this.transactions.run(async (m) => {
      await this.quotas.reserve(m, 'webhooks-per-tenant', tenantId);
      return this.repo.insert(m, tenantId, { url: dto.url, description: dto.description ?? '', events: [...new Set(dto.events)].sort(), secretSealed: box.seal(secret), createdBy: userId });
    });
    return { ...webhook, secret };
  }

  list(tenantId: string, page: { limit: number; cursor?: string }): Promise<Webhook[]> {
    return this.repo.list(tenantId, page.limit, decodeCursor(page.cursor));
  }

  async remove(tenantId: string, id: string): Promise<void> {
    if (!(await this.repo.delete(tenantId, id))) throw notFound(id);
  }

  async deliveries(tenantId: string, id: string, page: { limit: number; cursor?: string }): Promise<WebhookDelivery[]> {
    const before = decodeCursor(page.cursor);
    if (!(await this.repo.find(tenantId, id))) throw notFound(id);
    return this.repo.deliveries(tenantId, id, page.limit, before);
  }

  /** Sends a logged delivery again (same webhook-id, so a receiver that deduplicates still can). */
  async replay(tenantId: string, id: string, deliveryId: string): Promise<void> {
    const webhook = await this.repo.find(tenantId, id);
    if (!webhook) throw notFound(id);
    if (!webhook.enabled) throw new ProblemException(WebhookProblems['webhook-disabled'], `Webhook ${id} is disabled (${webhook.disabledReason ?? 'by the worker'}); create it again to receive deliveries.`);
    if (!(await this.repo.replay(tenantId, id, deliveryId))) throw new ProblemException(WebhookProblems['webhook-delivery-not-found'], `No delivery ${deliveryId} of webhook ${id}.`);
  }
}
