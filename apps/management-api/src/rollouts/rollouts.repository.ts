import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, type Tx } from '@flagship/persistence';

export const ROLLOUT_STATUSES = ['running', 'paused', 'completed', 'rolled_back', 'stopped'] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];
export const ROLLOUT_DECISIONS = ['started', 'advanced', 'held', 'rolled_back', 'completed', 'stopped', 'paused'] as const;
export type RolloutDecisionKind = (typeof ROLLOUT_DECISIONS)[number];

/** A binding with a plan, as the rollout reads it. */
export interface PlannedBinding {
  tenantId: string;
  productKey: string;
  flagKey: string;
  /** The environment whose flag the gateway evaluates for the binding: the one the rollout writes and watches. */
  environment: string;
  version: number;
  rolloutPlan: unknown;
}

export interface RolloutState {
  tenantId: string;
  productKey: string;
  bindingVersion: number;
  flagKey: string;
  status: RolloutStatus;
  stage: number;
  stageStartedAt: Date;
  controlId: string | null;
  treatmentId: string | null;
  flagVersion: number | null;
  envVersion: number | null;
  lastReason: string | null;
  nextCheckAt: Date;
  updatedAt: Date;
}

export interface RolloutDecisionRow {
  id: string;
  bindingVersion: number;
  flagKey: string;
  decision: RolloutDecisionKind;
  stage: number;
  percent: number;
  reason: string;
  figures: unknown;
  flagVersion: number | null;
  createdAt: Date;
}

/** Decisions GET .../rollout returns, newest first. */
export const MAX_DECISIONS_LISTED = 200;

/** What claimDue hands the runner: the binding locked, and its state (null before the first decision). */
export interface ClaimedRollout {
  binding: PlannedBinding;
  state: RolloutState | null;
}

/**
 * Rollout state and decision log (the port: SqlRolloutsRepository over Postgres, the fake in memory).
 * `claimDue` is the one cross-tenant read: the runner's, which locks the binding (SKIP LOCKED, so
 * replicas share the work) and then names its tenant everywhere else. Tenant id first everywhere else.
 */
export abstract class RolloutsRepository {
  /**
   * A binding whose plan needs a decision (it has a plan, and no state, a state of an older binding
   * version, or a running state whose next check is due), earliest next check (else binding update)
   * first, locked until the transaction ends and skipped while another holds it; with its state.
   */
  abstract claimDue(m: Tx, now: Date): Promise<ClaimedRollout | null>;
  abstract state(tenantId: string, productKey: string, m?: Tx): Promise<RolloutState | null>;
  /** Inserts or replaces the binding's state (in the claiming transaction). */
  abstract saveState(m: Tx, s: Omit<RolloutState, 'updatedAt'>): Promise<void>;
  abstract logDecision(m: Tx, tenantId: string, productKey: string, d: Omit<RolloutDecisionRow, 'id' | 'createdAt'>, at: Date): Promise<void>;
  /** Newest first, at most MAX_DECISIONS_LISTED. */
  abstract decisions(tenantId: string, productKey: string): Promise<RolloutDecisionRow[]>;
  /** The binding's plan as stored (the rollout view shows it beside the state); null when no binding. */
  abstract binding(tenantId: string, productKey: string): Promise<PlannedBinding | null>;
}

@Injectable()
export class SqlRolloutsRepository extends RolloutsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  /**
   * Locks the binding row; then reads it again under the lock (READ COMMITTED: a fresh snapshot, so a
   * decision another replica committed meanwhile is seen), with its state, or null when no longer due.
   */
  async claimDue(m: Tx, now: Date): Promise<ClaimedRollout | null> {
    const due = `b.rollout_plan IS NOT NULL AND (s.tenant_id IS NULL OR s.binding_version <> b.version OR (s.status = 'running' AND s.next_check_at <= $1))`;
    const found: Array<{ tenant_id: string; product_key: string }> = await m.query(
      `SELECT b.tenant_id, b.product_key FROM gateway_bindings b
         LEFT JOIN rollout_states s ON s.tenant_id = b.tenant_id AND s.product_key = b.product_key
        WHERE ${due}
        ORDER BY coalesce(s.next_check_at, b.updated_at) LIMIT 1 FOR UPDATE OF b SKIP LOCKED`,
      [now],
    );
    if (found.length === 0) return null;
    const rows: Array<Record<string, unknown>> = await m.query(
      `SELECT b.tenant_id, b.product_key, b.flag_key, b.environment_key, b.version, b.rollout_plan, (s.tenant_id IS NOT NULL) AS has_state
         FROM gateway_bindings b LEFT JOIN rollout_states s ON s.tenant_id = b.tenant_id AND s.product_key = b.product_key
        WHERE b.tenant_id = $2 AND b.product_key = $3 AND ${due}`,
      [now, found[0]!.tenant_id, found[0]!.product_key],
    );
    const b = rows[0];
    if (!b) return null;
    const binding: PlannedBinding = { tenantId: String(b['tenant_id']), productKey: String(b['product_key']), flagKey: String(b['flag_key']), environment: String(b['environment_key']), version: Number(b['version']), rolloutPlan: b['rollout_plan'] };
    return { binding, state: b['has_state'] ? await this.state(binding.tenantId, binding.productKey, m) : null };
  }

  async state(tenantId: string, productKey: string, m?: Tx): Promise<RolloutState | null> {
    const rows: Array<Record<string, unknown>> = await (m ?? this.ds).query(`SELECT * FROM rollout_states WHERE tenant_id = $1 AND product_key = $2`, [tenantId, productKey]);
    const r = rows[0];
    if (!r) return null;
    return {
      tenantId: String(r['tenant_id']),
      productKey: String(r['product_key']),
      bindingVersion: Number(r['binding_version']),
      flagKey: String(r['flag_key']),
      status: r['status'] as RolloutStatus,
      stage: Number(r['stage']),
      stageStartedAt: new Date(r['stage_started_at'] as string),
      controlId: (r['control_id'] as string | null) ?? null,
      treatmentId: (r['treatment_id'] as string | null) ?? null,
      flagVersion: r['flag_version'] === null ? null : Number(r['flag_version']),
      envVersion: r['env_version'] === null ? null : Number(r['env_version']),
      lastReason: (r['last_reason'] as string | null) ?? null,
      nextCheckAt: new Date(r['next_check_at'] as string),
      updatedAt: new Date(r['updated_at'] as string),
    };
  }

  async saveState(m: Tx, s: Omit<RolloutState, 'updatedAt'>): Promise<void> {
    await m.query(
      `INSERT INTO rollout_states (tenant_id, product_key, binding_version, flag_key, status, stage, stage_started_at, control_id, treatment_id, flag_version, env_version, last_reason, next_check_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now())
       ON CONFLICT (tenant_id, product_key) DO UPDATE SET binding_version = $3, flag_key = $4, status = $5, stage = $6, stage_started_at = $7, control_id = $8,
         treatment_id = $9, flag_version = $10, env_version = $11, last_reason = $12, next_check_at = $13, updated_at = now()`,
      [s.tenantId, s.productKey, s.bindingVersion, s.flagKey, s.status, s.stage, s.stageStartedAt, s.controlId, s.treatmentId, s.flagVersion, s.envVersion, s.lastReason, s.nextCheckAt],
    );
  }

  async logDecision(m: Tx, tenantId: string, productKey: string, d: Omit<RolloutDecisionRow, 'id' | 'createdAt'>, at: Date): Promise<void> {
    await m.query(
      `INSERT INTO rollout_decisions (tenant_id, product_key, binding_version, flag_key, decision, stage, percent, reason, figures, flag_version, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [tenantId, productKey, d.bindingVersion, d.flagKey, d.decision, d.stage, d.percent, d.reason, d.figures === undefined ? null : JSON.stringify(d.figures), d.flagVersion, at],
    );
  }

  async decisions(tenantId: string, productKey: string): Promise<RolloutDecisionRow[]> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT d.id::text AS id, binding_version, flag_key, decision, stage, percent, reason, figures, flag_version, created_at
         FROM rollout_decisions d WHERE d.tenant_id = $1 AND d.product_key = $2 ORDER BY d.id DESC LIMIT ${MAX_DECISIONS_LISTED}`,
      [tenantId, productKey],
    );
    return rows.map((r) => ({
      id: String(r['id']),
      bindingVersion: Number(r['binding_version']),
      flagKey: String(r['flag_key']),
      decision: r['decision'] as RolloutDecisionKind,
      stage: Number(r['stage']),
      percent: Number(r['percent']),
      reason: String(r['reason']),
      figures: r['figures'] ?? null,
      flagVersion: r['flag_version'] === null ? null : Number(r['flag_version']),
      createdAt: new Date(r['created_at'] as string),
    }));
  }

  async binding(tenantId: string, productKey: string): Promise<PlannedBinding | null> {
    const rows: Array<Record<string, unknown>> = await this.ds.query(`SELECT flag_key, environment_key, version, rollout_plan FROM gateway_bindings WHERE tenant_id = $1 AND product_key = $2`, [tenantId, productKey]);
    const r = rows[0];
    return r ? { tenantId, productKey, flagKey: String(r['flag_key']), environment: String(r['environment_key']), version: Number(r['version']), rolloutPlan: r['rollout_plan'] ?? null } : null;
  }
}
