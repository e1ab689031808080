import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, withTransaction } from '@flagship/persistence';
import type { SendOutcome } from './webhook-sender';

/** A delivery the worker holds the lease of, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  tenantId: string;
  webhookId: string;
  url: string;
  secretSealed: string;
  payload: unknown;
  /** This attempt's number (1 for the first). */
  attempt: number;
  createdAt: Date;
}

/** What became of an attempt: delivered, to be tried again at `retryAt`, or given up. */
export type Settlement = { status: 'delivered' } | { status: 'pending'; retryAt: Date } | { status: 'failed' };

/** The worker's side of the webhook outbox (management-api writes it, see 1763885000000-webhooks). */
@Injectable()
export class OutboundWebhooksRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  /**
   * Up to `limit` due deliveries of enabled webhooks, each leased for `leaseMs` (its next attempt is
   * pushed past the lease and its count taken): replicas skip each other's rows (SKIP LOCKED), and a
   * worker that dies mid-send leaves the row to be tried again when the lease runs out.
   */
  async claim(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    // TypeORM answers an UPDATE as [rows, affected].
    const [rows] = (await this.ds.query(
      `WITH due AS (
         SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND w.enabled
          ORDER BY d.next_attempt_at
          LIMIT $1
          FOR UPDATE OF d SKIP LOCKED
       )
       UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $2 * interval '1 millisecond'
         FROM due, webhooks w
        WHERE d.id = due.id AND w.id = d.webhook_id
       RETURNING d.id, d.tenant_id, d.webhook_id, w.url, w.secret_sealed, d.payload, d.attempts, d.created_at`,
      [limit, leaseMs],
    )) as [Array<{ id: string; tenant_id: string; webhook_id: string; url: string; secret_sealed: string; payload: unknown; attempts: number; created_at: Date }>, number];
    return rows.map((r) => ({ id: r.id, tenantId: r.tenant_id, webhookId: r.webhook_id, url: r.url, secretSealed: r.secret_sealed, payload: r.payload, attempt: r.attempts, createdAt: r.created_at }));
  }

  /** Deletes up to `limit` settled deliveries (with their attempts) made before `before`; how many it deleted. */
  async prune(before: Date, limit: number): Promise<number> {
    const [, deleted] = (await this.ds.query(
      `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < $1 ORDER BY created_at LIMIT $2)`,
      [before.toISOString(), limit],
    )) as [unknown, number];
    return deleted;
  }

  /**
   * Logs the attempt and settles the delivery, in one transaction; only while this worker's lease is
   * the current one (a worker whose lease ran out and was overtaken logs nothing). A success clears
   * the webhook's failing mark; a failure sets it, and a webhook failing since `disableBefore` or
   * earlier is disabled with its pending deliveries given up. Returns whether it disabled it.
   */
  async settle(d: ClaimedDelivery, result: SendOutcome, settlement: Settlement, disableBefore: Date): Promise<{ disabled: boolean }> {
    return withTransaction(this.ds, async (m) => {
      const [, owned] = (await m.query(
        `UPDATE webhook_deliveries SET status = $3, next_attempt_at = COALESCE($4::timestamptz, next_attempt_at) WHERE id = $1 AND attempts = $2`,
        [d.id, d.attempt, settlement.status, settlement.status === 'pending' ? settlement.retryAt.toISOString() : null],
      )) as [unknown, number];
      if (owned === 0) return { disabled: false };
      await m.query(`INSERT INTO webhook_attempts (delivery_id, attempt, outcome, response_code, duration_ms, error) VALUES ($1, $2, $3, $4, $5, $6)`, [
        d.id,
        d.attempt,
        result.outcome,
        result.responseCode,
        result.durationMs,
        result.error,
      ]);
      if (result.outcome === 'delivered') {
        await m.query(`UPDATE webhooks SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`, [d.webhookId]);
        return { disabled: false };
      }
      const [disabled] = (await m.query(
        `WITH old AS (SELECT id, enabled, COALESCE(failing_since, now()) <= $2 AS too_long FROM webhooks WHERE id = $1 FOR UPDATE)
         UPDATE webhooks w SET failing_since = COALESCE(w.failing_since, now()),
                enabled = w.enabled AND NOT old.too_long,
                disabled_at = CASE WHEN old.enabled AND old.too_long THEN now() ELSE w.disabled_at END,
                disabled_reason = CASE WHEN old.enabled AND old.too_long THEN $3 ELSE w.disabled_reason END
           FROM old
          WHERE w.id = old.id
          RETURNING old.enabled AND old.too_long AS just_disabled`,
        [d.webhookId, disableBefore.toISOString(), `every delivery failed since ${disableBefore.toISOString()} or earlier (last: ${result.error ?? result.outcome})`.slice(0, 500)],
      )) as [Array<{ just_disabled: boolean | null }>, number];
      const justDisabled = disabled[0]?.just_disabled === true;
      if (justDisabled) await m.query(`UPDATE webhook_deliveries SET status = 'failed' WHERE webhook_id = $1 AND status = 'pending'`, [d.webhookId]);
      return { disabled: justDisabled };
    });
  }
}
