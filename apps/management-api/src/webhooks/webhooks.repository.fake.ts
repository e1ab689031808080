import { randomUUID } from 'node:crypto';
import type { PageCursor } from '@flagship/service-kit';
import type { DomainEvent } from './webhook-events';
import { MAX_PENDING_DELIVERIES, type NewWebhook, type Webhook, type WebhookDelivery, WebhooksRepository } from './webhooks.repository';

interface StoredWebhook extends Webhook {
  tenantId: string;
  secretSealed: string;
}

/** In-memory twin of SqlWebhooksRepository for service unit tests: same contract, no I/O. */
export class FakeWebhooksRepository extends WebhooksRepository {
  readonly webhooks = new Map<string, StoredWebhook>();
  readonly outbox: Array<WebhookDelivery & { tenantId: string; webhookId: string }> = [];
  private clock = Date.parse('2026-11-29T00:00:00.000Z');

  private now(): Date {
    return new Date((this.clock += 1));
  }

  async insert(_m: unknown, tenantId: string, w: NewWebhook): Promise<Webhook> {
    const row: StoredWebhook = { ...w, id: randomUUID(), tenantId, enabled: true, disabledAt: null, disabledReason: null, droppedEvents: 0, createdAt: this.now() };
    this.webhooks.set(row.id, row);
    return this.view(row);
  }

  private view({ tenantId: _t, secretSealed: _s, ...w }: StoredWebhook): Webhook {
    return { ...w, events: [...w.events] };
  }

  async list(tenantId: string, limit: number, after?: PageCursor): Promise<Webhook[]> {
    const key = (w: Webhook): string => `${w.createdAt.toISOString()} ${w.id}`;
    return [...this.webhooks.values()]
      .filter((w) => w.tenantId === tenantId && (!after || key(w) > `${after.at} ${after.id}`))
      .sort((a, b) => (key(a) < key(b) ? -1 : 1))
      .slice(0, limit + 1)
      .map((w) => this.view(w));
  }

  async find(tenantId: string, id: string): Promise<Webhook | null> {
    const w = this.webhooks.get(id);
    return w && w.tenantId === tenantId ? this.view(w) : null;
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    if (!(await this.find(tenantId, id))) return false;
    this.webhooks.delete(id);
    this.outbox.splice(0, this.outbox.length, ...this.outbox.filter((d) => d.webhookId !== id));
    return true;
  }

  async deliveries(tenantId: string, webhookId: string, limit: number, before?: PageCursor): Promise<WebhookDelivery[]> {
    const own = this.outbox.filter((d) => d.tenantId === tenantId && d.webhookId === webhookId);
    const end = before ? own.findIndex((d) => d.id === before.id) : own.length;
    return own
      .slice(0, end < 0 ? 0 : end)
      .reverse()
      .slice(0, limit + 1)
      .map(({ tenantId: _t, webhookId: _w, ...d }) => ({ ...d, attempts: [...d.attempts] }));
  }

  async replay(tenantId: string, webhookId: string, deliveryId: string): Promise<boolean> {
    const d = this.outbox.find((x) => x.tenantId === tenantId && x.webhookId === webhookId && x.id === deliveryId);
    if (!d) return false;
    d.status = 'pending';
    d.nextAttemptAt = this.now();
    return true;
  }

  async enqueue(_m: unknown, tenantId: string, events: readonly DomainEvent[]): Promise<void> {
    for (const e of events) {
      for (const w of this.webhooks.values()) {
        if (w.tenantId !== tenantId || !w.enabled || !w.events.includes(e.type)) continue;
        if (this.outbox.filter((d) => d.webhookId === w.id && d.status === 'pending').length >= MAX_PENDING_DELIVERIES) {
          w.droppedEvents++;
          continue;
        }
        const at = this.now();
        this.outbox.push({ id: randomUUID(), tenantId, webhookId: w.id, type: e.type, payload: { type: e.type, timestamp: at.toISOString(), data: e.data }, status: 'pending', attempts: [], nextAttemptAt: at, createdAt: at });
      }
    }
  }

  /** Test helper: what a disabled receiver looks like after the worker gave up on it. */
  disable(id: string): void {
    const w = this.webhooks.get(id);
    if (w) Object.assign(w, { enabled: false, disabledAt: this.now(), disabledReason: 'failing for a day' });
  }
}
