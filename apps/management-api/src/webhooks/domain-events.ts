import { Injectable } from '@nestjs/common';
import type { Tx } from '@flagship/persistence';
import type { DomainEvent } from './webhook-events';
import { WebhooksRepository } from './webhooks.repository';

/**
 * Where management-api says "this changed" (a flag, a segment, an environment, a membership): inside
 * the change's own transaction, so the event commits with it or not at all, and the request only
 * pays one INSERT ... SELECT (no row when no webhook is subscribed). Delivery is billing-worker's.
 * The ledger's events (credits.low, budget.exceeded) are written by triggers beside the ledger's
 * statements (migration 1763885000000-webhooks), through the same fan-out.
 */
@Injectable()
export class DomainEvents {
  constructor(private readonly repo: WebhooksRepository) {}

  async record(m: Tx, tenantId: string, ...events: DomainEvent[]): Promise<void> {
    if (events.length > 0) await this.repo.enqueue(m, tenantId, events);
  }
}
