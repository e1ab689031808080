import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';

/** A rollout plan as stored (CONTRACT.md section 11); the guarded rollout job reads it. */
export interface RolloutPlan {
  stages: Array<{ percent: number; minRequests?: number; minMinutes?: number }>;
  guards: { errorRate?: number; p95LatencyMs?: number; costPerRequest?: number };
}

/** A gateway route bound to a flag: one per tenant and product key. */
export interface BindingRow {
  tenantId: string;
  productKey: string;
  flagKey: string;
  modelAlias: string | null;
  environment: string;
  rolloutPlan: RolloutPlan | null;
  /** Variation id -> monthly cap in micro-credits. */
  spendCaps: Record<string, number> | null;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export type BindingFields = Pick<BindingRow, 'flagKey' | 'modelAlias' | 'environment' | 'rolloutPlan' | 'spendCaps'>;

export interface BindingAuditRecord {
  productKey: string;
  action: 'create' | 'update' | 'delete';
  actor: string;
  changes: Record<string, unknown>;
}

export interface BindingAuditRow extends BindingAuditRecord {
  createdAt: Date;
}

/**
 * Gateway bindings of one tenant (the port: SqlGatewayBindingsRepository over Postgres, the fake in
 * memory). Every method takes the tenant id first and names it in every statement; another tenant's
 * binding reads as missing. Methods taking a transaction write in it.
 */
export abstract class GatewayBindingsRepository {
  /** By product key. */
  abstract list(tenantId: string): Promise<BindingRow[]>;
  abstract find(tenantId: string, productKey: string, m?: EntityManager): Promise<BindingRow | null>;
  /** The row locked until the transaction ends, so concurrent writers queue. */
  abstract lock(m: EntityManager, tenantId: string, productKey: string): Promise<BindingRow | null>;
  /** Version 1; throws a unique violation when the product key is bound already. */
  abstract insert(m: EntityManager, tenantId: string, productKey: string, fields: BindingFields): Promise<BindingRow>;
  /** Applied only while the row is at `expectedVersion`, bumping it; false otherwise. */
  abstract update(m: EntityManager, tenantId: string, productKey: string, expectedVersion: number, fields: BindingFields): Promise<BindingRow | null>;
  abstract delete(m: EntityManager, tenantId: string, productKey: string): Promise<boolean>;
  abstract audit(m: EntityManager, tenantId: string, record: BindingAuditRecord): Promise<void>;
  /** Oldest first. */
  abstract auditTrail(tenantId: string, productKey: string): Promise<BindingAuditRow[]>;
}

interface Row {
  tenant_id: string;
  product_key: string;
  flag_key: string;
  model_alias: string | null;
  environment_key: string;
  rollout_plan: RolloutPlan | null;
  spend_caps: Record<string, number> | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'tenant_id, product_key, flag_key, model_alias, environment_key, rollout_plan, spend_caps, version, created_at, updated_at';

const toRow = (r: Row): BindingRow => ({
  tenantId: r.tenant_id,
  productKey: r.product_key,
  flagKey: r.flag_key,
  modelAlias: r.model_alias,
  environment: r.environment_key,
  rolloutPlan: r.rollout_plan,
  spendCaps: r.spend_caps,
  version: r.version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const json = (v: unknown): string | null => (v === null ? null : JSON.stringify(v));

@Injectable()
export class SqlGatewayBindingsRepository extends GatewayBindingsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async list(tenantId: string): Promise<BindingRow[]> {
    const rows: Row[] = await this.ds.query(`SELECT ${COLUMNS} FROM gateway_bindings WHERE tenant_id = $1 ORDER BY product_key`, [tenantId]);
    return rows.map(toRow);
  }

  async find(tenantId: string, productKey: string, m?: EntityManager): Promise<BindingRow | null> {
    const rows: Row[] = await (m ?? this.ds).query(`SELECT ${COLUMNS} FROM gateway_bindings WHERE tenant_id = $1 AND product_key = $2`, [tenantId, productKey]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  async lock(m: EntityManager, tenantId: string, productKey: string): Promise<BindingRow | null> {
    const rows: Row[] = await m.query(`SELECT ${COLUMNS} FROM gateway_bindings WHERE tenant_id = $1 AND product_key = $2 FOR UPDATE`, [tenantId, productKey]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  async insert(m: EntityManager, tenantId: string, productKey: string, f: BindingFields): Promise<BindingRow> {
    const rows: Row[] = await m.query(
      `INSERT INTO gateway_bindings (tenant_id, product_key, flag_key, model_alias, environment_key, rollout_plan, spend_caps)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb) RETURNING ${COLUMNS}`,
      [tenantId, productKey, f.flagKey, f.modelAlias, f.environment, json(f.rolloutPlan), json(f.spendCaps)],
    );
    return toRow(rows[0]!);
  }

  async update(m: EntityManager, tenantId: string, productKey: string, expectedVersion: number, f: BindingFields): Promise<BindingRow | null> {
    // A SELECT around the UPDATE: TypeORM answers a bare UPDATE ... RETURNING with [rows, count].
    const rows: Row[] = await m.query(
      `WITH changed AS (
         UPDATE gateway_bindings SET flag_key = $4, model_alias = $5, environment_key = $6, rollout_plan = $7::jsonb, spend_caps = $8::jsonb, version = version + 1, updated_at = now()
          WHERE tenant_id = $1 AND product_key = $2 AND version = $3
         RETURNING ${COLUMNS})
       SELECT * FROM changed`,
      [tenantId, productKey, expectedVersion, f.flagKey, f.modelAlias, f.environment, json(f.rolloutPlan), json(f.spendCaps)],
    );
    return rows[0] ? toRow(rows[0]) : null;
  }

  async delete(m: EntityManager, tenantId: string, productKey: string): Promise<boolean> {
    const rows: unknown[] = await m.query(
      `WITH gone AS (DELETE FROM gateway_bindings WHERE tenant_id = $1 AND product_key = $2 RETURNING product_key) SELECT product_key FROM gone`,
      [tenantId, productKey],
    );
    return rows.length > 0;
  }

  async audit(m: EntityManager, tenantId: string, r: BindingAuditRecord): Promise<void> {
    await m.query(`INSERT INTO gateway_binding_audit (tenant_id, product_key, action, actor, changes) VALUES ($1, $2, $3, $4, $5::jsonb)`, [
      tenantId,
      r.productKey,
      r.action,
      r.actor,
      JSON.stringify(r.changes),
    ]);
  }

  async auditTrail(tenantId: string, productKey: string): Promise<BindingAuditRow[]> {
    const rows: Array<{ product_key: string; action: BindingAuditRecord['action']; actor: string; changes: Record<string, unknown>; created_at: Date }> = await this.ds.query(
      `SELECT product_key, action, actor, changes, created_at FROM gateway_binding_audit WHERE tenant_id = $1 AND product_key = $2 ORDER BY id`,
      [tenantId, productKey],
    );
    return rows.map((r) => ({ productKey: r.product_key, action: r.action, actor: r.actor, changes: r.changes, createdAt: r.created_at }));
  }
}
