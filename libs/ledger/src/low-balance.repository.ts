import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, queryPool } from '@flagship/persistence';
import type { LowBalance } from '@flagship/redis';

/** A tenant's low-balance threshold (micro-credits); `armed` until the balance crosses it, re-armed above it. */
export interface LowBalanceAlert {
  threshold: number;
  armed: boolean;
  updatedAt: string;
}

/** One crossing: a settlement took the tenant's balance from above `threshold` to `balance` (at or below it). */
export interface LowBalanceCrossing {
  id: string;
  tenantId: string;
  threshold: number;
  balance: number;
  /** ISO 8601, milliseconds, UTC. */
  crossedAt: string;
}

/** A crossing as SETTLE's json_build_object writes it. */
export interface LowBalanceCrossingRow {
  id: string;
  tenantId: string;
  threshold: number | string;
  balance: number | string;
  crossedAt: string;
}

export function toCrossing(r: LowBalanceCrossingRow): LowBalanceCrossing {
  return { id: r.id, tenantId: r.tenantId, threshold: Number(r.threshold), balance: Number(r.balance), crossedAt: new Date(r.crossedAt).toISOString() };
}

/**
 * A recorded crossing as the change feed's `low-balance` message (libs/redis CHANNELS.lowBalance), the
 * same whoever recorded it: the gateway's settlement or billing-worker's reconciler.
 */
export function lowBalanceEvent(c: LowBalanceCrossing): LowBalance {
  return { tenantId: c.tenantId, crossingId: c.id, threshold: c.threshold, balance: c.balance, crossedAt: c.crossedAt };
}

/** The crossings LOW_BALANCE_CROSSINGS recorded, as a statement's rows (`SELECT ... FROM recorded`). */
export const RECORDED_CROSSINGS = `json_build_object('id', id, 'tenantId', tenant_id, 'threshold', threshold, 'balance', balance, 'crossedAt', crossed_at)`;

const CROSSING_COLUMNS = `id, tenant_id AS "tenantId", threshold::text AS threshold, balance::text AS balance, crossed_at AS "crossedAt"`;

/**
 * A tenant's low-balance threshold and its crossings as management-api's rules use them (the port:
 * LowBalanceRepository on Postgres, an in-memory twin in the service's unit specs).
 */
export abstract class LowBalanceAlerts {
  abstract get(tenantId: string): Promise<LowBalanceAlert | null>;
  /** Sets the threshold, armed only while the balance is above it. */
  abstract set(tenantId: string, threshold: number): Promise<LowBalanceAlert>;
  /** Whether there was a threshold to remove; its crossings stay on record. */
  abstract remove(tenantId: string): Promise<boolean>;
  /** Newest first (crossed, then id); `after`: the previous page's last crossing. */
  abstract crossings(tenantId: string, page: { limit: number; after?: { at: string; id: string } }): Promise<LowBalanceCrossing[]>;
}

/**
 * Tenants' low-balance thresholds and their recorded crossings (the settlement records them: SETTLE's
 * LOW_BALANCE_CROSSINGS; a grant re-arms: CreditsRepository.grantCredits). Every statement names the tenant.
 */
@Injectable()
export class LowBalanceRepository extends LowBalanceAlerts {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async get(tenantId: string): Promise<LowBalanceAlert | null> {
    const rows: Array<{ threshold: string; armed: boolean; updated_at: Date }> = await this.ds.query(
      `SELECT threshold::text AS threshold, armed, updated_at FROM low_balance_alerts WHERE tenant_id = $1`,
      [tenantId],
    );
    const r = rows[0];
    return r ? { threshold: Number(r.threshold), armed: r.armed, updatedAt: r.updated_at.toISOString() } : null;
  }

  /**
   * Sets the threshold. Armed only while the balance is above it: setting a threshold the balance is
   * already at or below records no crossing (none happened); the next grant above it arms it. The
   * balance row is locked first (as a settlement locks it), in the same statement, so a settlement at
   * the same moment sees either the old threshold or the new one with `armed` matching its balance.
   */
  async set(tenantId: string, threshold: number): Promise<LowBalanceAlert> {
    const rows: Array<{ threshold: string; armed: boolean; updated_at: Date }> = await this.ds.query(
      `INSERT INTO low_balance_alerts (tenant_id, threshold, armed)
       SELECT $1, $2, COALESCE((SELECT balance FROM credit_balances WHERE tenant_id = $1 FOR UPDATE), 0) > $2
       ON CONFLICT (tenant_id) DO UPDATE SET threshold = EXCLUDED.threshold, armed = EXCLUDED.armed, updated_at = now()
       RETURNING threshold::text AS threshold, armed, updated_at`,
      [tenantId, threshold],
    );
    const r = rows[0]!;
    return { threshold: Number(r.threshold), armed: r.armed, updatedAt: r.updated_at.toISOString() };
  }

  /** Whether there was a threshold to remove; its crossings stay on record. */
  async remove(tenantId: string): Promise<boolean> {
    // queryPool answers the rows: TypeORM's query() answers a bare DELETE ... RETURNING with [rows, count], always 2 long.
    const rows = await queryPool(this.ds, { text: `DELETE FROM low_balance_alerts WHERE tenant_id = $1 RETURNING tenant_id`, values: [tenantId] });
    return rows.length > 0;
  }

  /** Newest first; `after`: the keyset position of the previous page's last crossing. */
  async crossings(tenantId: string, page: { limit: number; after?: { at: string; id: string } }): Promise<LowBalanceCrossing[]> {
    const rows: LowBalanceCrossingRow[] = page.after
      ? await this.ds.query(
          `SELECT ${CROSSING_COLUMNS} FROM low_balance_crossings WHERE tenant_id = $1 AND (crossed_at, id) < ($2::timestamptz, $3::uuid)
            ORDER BY crossed_at DESC, id DESC LIMIT $4`,
          [tenantId, page.after.at, page.after.id, page.limit],
        )
      : await this.ds.query(`SELECT ${CROSSING_COLUMNS} FROM low_balance_crossings WHERE tenant_id = $1 ORDER BY crossed_at DESC, id DESC LIMIT $2`, [tenantId, page.limit]);
    return rows.map(toCrossing);
  }
}
