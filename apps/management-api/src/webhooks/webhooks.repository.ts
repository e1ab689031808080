import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import { isUuid } from '@flagship/domain';
import type { PageCursor } from '@flagship/service-kit';
import type { DomainEvent } from './webhook-events';

export interface Webhook {
  id: string;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  disabledAt: Date | null;
  disabledReason: string | null;
  /** Events not queued because MAX_PENDING_DELIVERIES were already waiting. */
  droppedEvents: number;
  createdBy: string | null;
  createdAt: Date;
}

export interface WebhookAttempt {
  attempt: number;
  attemptedAt: Date;
  outcome: 'delivered' | 'failed' | 'refused';
  responseCode: number | null;
  durationMs: number;
  error: string | null;
}

export interface WebhookDelivery {
  id: string;
  type: string;
  payload: unknown;
  status: 'pending' | 'delivered' | 'failed';
  attempts: WebhookAttempt[];
  nextAttemptAt: Date | null;
  createdAt: Date;
}

export interface NewWebhook {
  url: string;
  description: string;
  events: string[];
  secretSealed: string;
  createdBy: string | null;
}

/** A webhook with this many deliveries waiting takes no more events (webhook_enqueue; each one missed is counted). */
export const MAX_PENDING_DELIVERIES = 10_000;

/** A delivery log's page holds at most this many attempts per delivery (the newest). */
export const ATTEMPTS_SHOWN = 50;

/** The webhooks of a tenant, their outbox and delivery log; every method takes the tenant first. */
export abstract class WebhooksRepository {
  abstract insert(m: EntityManager, tenantId: string, w: NewWebhook): Promise<Webhook>;
  abstract list(tenantId: string, limit: number, after?: PageCursor): Promise<Webhook[]>;
  abstract find(tenantId: string, id: string): Promise<Webhook | null>;
  abstract delete(tenantId: string, id: string): Promise<boolean>;
  /** Newest first, `limit + 1` rows, each with its attempts; `before`: after the delivery it names (its id). */
  abstract deliveries(tenantId: string, webhookId: string, limit: number, before?: PageCursor): Promise<WebhookDelivery[]>;
  /** Puts the delivery back in the queue, due now; false when there is no such delivery. */
  abstract replay(tenantId: string, webhookId: string, deliveryId: string): Promise<boolean>;
  /** One delivery per event and subscribed, enabled webhook of the tenant, in `m`. */
  abstract enqueue(m: EntityManager, tenantId: string, events: readonly DomainEvent[]): Promise<void>;
}

interface WebhookRow {
  id: string;
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  disabled_at: Date | null;
  disabled_reason: string | null;
  dropped_events: string;
  created_by: string | null;
  created_at: Date;
}

const COLUMNS = 'id, url, description, events, enabled, disabled_at, disabled_reason, dropped_events, created_by, created_at';

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  url: r.url,
  description: r.description,
  events: r.events,
  enabled: r.enabled,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
  droppedEvents: Number(r.dropped_events),
  createdBy: r.created_by,
  createdAt: r.created_at,
});

@Injectable()
export class SqlWebhooksRepository extends WebhooksRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async insert(m: EntityManager, tenantId: string, w: NewWebhook): Promise<Webhook> {
    const [row] = (await m.query(
      `INSERT INTO webhooks (tenant_id, url, description, events, secret_sealed, created_by) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
      [tenantId, w.url, w.description, w.events, w.secretSealed, w.createdBy],
    )) as WebhookRow[];
    return toWebhook(row!);
  }

  async list(tenantId: string, limit: number, after?: PageCursor): Promise<Webhook[]> {
    const rows = (await this.ds.query(
      after
        ? `SELECT ${COLUMNS} FROM webhooks WHERE tenant_id = $1 AND (created_at, id) > ($3::timestamptz, $4::uuid) ORDER BY created_at, id LIMIT $2`
        : `SELECT ${COLUMNS} FROM webhooks WHERE tenant_id = $1 ORDER BY created_at, id LIMIT $2`,
      after ? [tenantId, limit + 1, after.at, after.id] : [tenantId, limit + 1],
    )) as WebhookRow[];
    return rows.map(toWebhook);
  }

  async find(tenantId: string, id: string): Promise<Webhook | null> {
    if (!isUuid(id)) return null;
    const [row] = (await this.ds.query(`SELECT ${COLUMNS} FROM webhooks WHERE tenant_id = $1 AND id = $2`, [tenantId, id])) as WebhookRow[];
    return row ? toWebhook(row) : null;
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    if (!isUuid(id)) return false;
    // TypeORM answers an UPDATE or DELETE as [rows, affected].
    const [, affected] = (await this.ds.query(`DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2`, [tenantId, id])) as [unknown, number];
    return affected > 0;
  }

  async deliveries(tenantId: string, webhookId: string, limit: number, before?: PageCursor): Promise<WebhookDelivery[]> {
    if (!isUuid(webhookId)) return [];
    const rows = (await this.ds.query(
      `SELECT d.id, d.event_type, d.payload, d.status, d.next_attempt_at, d.created_at,
              COALESCE((SELECT jsonb_agg(a ORDER BY a.attempt) FROM (
                 SELECT attempt, attempted_at AS "attemptedAt", outcome, response_code AS "responseCode", duration_ms AS "durationMs", error
                   FROM webhook_attempts WHERE delivery_id = d.id ORDER BY id DESC LIMIT ${ATTEMPTS_SHOWN}) a), '[]'::jsonb) AS attempts
         FROM webhook_deliveries d
        WHERE d.tenant_id = $1 AND d.webhook_id = $2 ${before ? 'AND d.seq < (SELECT seq FROM webhook_deliveries WHERE id = $4::uuid AND webhook_id = $2)' : ''}
        ORDER BY d.seq DESC LIMIT $3`,
      before ? [tenantId, webhookId, limit + 1, before.id] : [tenantId, webhookId, limit + 1],
    )) as Array<{ id: string; event_type: string; payload: unknown; status: WebhookDelivery['status']; next_attempt_at: Date; created_at: Date; attempts: Array<WebhookAttempt & { attemptedAt: string }> }>;
    return rows.map((r) => ({
      id: r.id,
      type: r.event_type,
      payload: r.payload,
      status: r.status,
      nextAttemptAt: r.status === 'pending' ? r.next_attempt_at : null,
      createdAt: r.created_at,
      attempts: r.attempts.map((a) => ({ ...a, attemptedAt: new Date(a.attemptedAt) })),
    }));
  }

  async replay(tenantId: string, webhookId: string, deliveryId: string): Promise<boolean> {
    if (!isUuid(webhookId) || !isUuid(deliveryId)) return false;
    const [, affected] = (await this.ds.query(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3`, [
      tenantId,
      webhookId,
      deliveryId,
    ])) as [unknown, number];
    return affected > 0;
  }

  async enqueue(m: EntityManager, tenantId: string, events: readonly DomainEvent[]): Promise<void> {
    await m.query(`SELECT webhook_enqueue($1, e->>'type', e->'data') FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n`, [tenantId, JSON.stringify(events)]);
  }
}
