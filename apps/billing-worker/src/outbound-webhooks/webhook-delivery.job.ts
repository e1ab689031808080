import { Logger } from '@nestjs/common';
import { signWebhook, type WebhookSecretBox } from '@flagship/service-kit';
import type { Job } from '../jobs/job';
import type { ClaimedDelivery, OutboundWebhooksRepository, Settlement } from './outbound-webhooks.repository';
import { nextAttemptAt, type RetryPolicy } from './webhook-retry';
import type { SendOutcome, WebhookSender } from './webhook-sender';

export interface WebhookDeliverySettings extends RetryPolicy {
  pollMs: number;
  /** Deliveries claimed, and sent at once, per pass. */
  batchSize: number;
  /** How long a claimed delivery is this worker's; past it another replica may send it again. */
  leaseMs: number;
  /** Settled deliveries older than this are deleted from the log, a batch an hour. */
  retentionMs: number;
}

/** Pruning the log runs at most this often, a batch of PRUNE_BATCH rows at a time. */
const PRUNE_EVERY_MS = 3_600_000;
const PRUNE_BATCH = 5_000;

/**
 * Sends the webhook outbox: claims due deliveries (leased, so replicas share the queue and a dead
 * worker's rows come back), signs each as Standard Webhooks has it (`webhook-id` is the delivery's
 * id, the same on every retry, so receivers deduplicate), sends them in parallel and logs each
 * attempt. Failures are retried with exponential backoff for the window; a webhook that has failed
 * for the whole window is disabled (its row says when and why, which the tenant's admins read in
 * GET /api/webhooks) and logged here.
 */
export class WebhookDeliveryJob implements Job {
  readonly name = 'webhook-delivery';
  readonly intervalMs: number;
  private readonly logger = new Logger('WebhookDelivery');
  private prunedAt = 0;

  constructor(
    private readonly repo: Pick<OutboundWebhooksRepository, 'claim' | 'settle' | 'prune'>,
    private readonly sender: Pick<WebhookSender, 'send'>,
    private readonly secrets: Pick<WebhookSecretBox, 'open'>,
    private readonly settings: WebhookDeliverySettings,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.intervalMs = settings.pollMs;
  }

  async run(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return false;
    const now = this.now().getTime();
    // The log keeps what its admins may want to replay, not every delivery ever made.
    if (now - this.prunedAt >= PRUNE_EVERY_MS) {
      this.prunedAt = now;
      await this.repo.prune(new Date(now - this.settings.retentionMs), PRUNE_BATCH);
    }
    const claimed = await this.repo.claim(this.settings.batchSize, this.settings.leaseMs);
    await Promise.all(claimed.map((d) => this.deliver(d)));
    return claimed.length === this.settings.batchSize;
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    const body = JSON.stringify(d.payload);
    let result: SendOutcome;
    try {
      const timestamp = Math.floor(this.now().getTime() / 1000);
      const signature = signWebhook(this.secrets.open(d.secretSealed), d.id, timestamp, body);
      result = await this.sender.send(d.url, { 'webhook-id': d.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature }, body);
    } catch (err) {
      // A secret that no longer opens (WEBHOOK_SECRETS_KEY changed) fails like a receiver that is down: logged, retried, in the end disabled.
      result = { outcome: 'failed', responseCode: null, durationMs: 0, error: `not sent: ${err instanceof Error ? err.message : String(err)}`.slice(0, 500) };
    }
    const now = this.now();
    let settlement: Settlement;
    if (result.outcome === 'delivered') settlement = { status: 'delivered' };
    else {
      const retryAt = nextAttemptAt(d.attempt, d.createdAt, now, this.settings);
      settlement = retryAt ? { status: 'pending', retryAt } : { status: 'failed' };
    }
    const { disabled } = await this.repo.settle(d, result, settlement, new Date(now.getTime() - this.settings.windowMs));
    if (disabled) this.logger.warn(`webhook ${d.webhookId} of tenant ${d.tenantId} disabled: every delivery failed for ${Math.round(this.settings.windowMs / 1000)} s`);
  }
}
