import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import { type Backlog, backlogOf } from '@flagship/ledger';

export interface StoredEvent {
  id: string;
  type: string;
  payload: { id: string; type: string; created: number; data: { object: Record<string, unknown> } };
  attempts: number;
}

/**
 * The webhook inbox: one row per Stripe event id, so a redelivered or caught-up event is stored
 * once; the oldest due one is processed first, and marked in the transaction of its effect. The
 * clock is the store's (Postgres' now() in the real one).
 */
export abstract class StripeEventsRepository {
  /** True when the event is new. */
  abstract store(event: { id: string; type: string; created: number }, source: 'webhook' | 'catch_up'): Promise<boolean>;
  /** The oldest (by Stripe's `created`, then arrival) due unprocessed event, locked for this transaction; other replicas skip it. */
  abstract claimNext(m: EntityManager): Promise<StoredEvent | null>;
  /** In the transaction of the event's effect: processed exactly when the effect commits. */
  abstract markProcessed(m: EntityManager, id: string, note?: string | null): Promise<void>;
  /** An attempt failed: counted, its error kept (500 characters), and not due again for `retryInMs`. */
  abstract recordFailure(id: string, error: string, retryInMs: number): Promise<void>;
  /** Events not yet processed and how long ago the oldest was received (a monitoring read for the inbox's gauges). */
  abstract inboxBacklog(m: EntityManager): Promise<Backlog>;
}

@Injectable()
export class SqlStripeEventsRepository extends StripeEventsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async store(event: { id: string; type: string; created: number }, source: 'webhook' | 'catch_up'): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO stripe_events (id, type, stripe_created, payload, source) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [event.id, event.type, event.created, JSON.stringify(event), source],
    );
    return rows.length > 0;
  }

  async claimNext(m: EntityManager): Promise<StoredEvent | null> {
    const rows: StoredEvent[] = await m.query(
      `SELECT id, type, payload, attempts FROM stripe_events
       WHERE processed_at IS NULL AND next_attempt_at <= now()
       ORDER BY stripe_created, received_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
    );
    return rows[0] ?? null;
  }

  async markProcessed(m: EntityManager, id: string, note: string | null = null): Promise<void> {
    await m.query(`UPDATE stripe_events SET processed_at = now(), attempts = attempts + 1, last_error = $2 WHERE id = $1`, [id, note]);
  }

  async recordFailure(id: string, error: string, retryInMs: number): Promise<void> {
    await this.ds.query(
      `UPDATE stripe_events SET attempts = attempts + 1, last_error = $2, next_attempt_at = now() + ($3::text || ' milliseconds')::interval
       WHERE id = $1 AND processed_at IS NULL`,
      [id, error.slice(0, 500), retryInMs],
    );
  }

  async inboxBacklog(m: EntityManager): Promise<Backlog> {
    return backlogOf(m, 'stripe_events', 'received_at', 'processed_at IS NULL');
  }
}
