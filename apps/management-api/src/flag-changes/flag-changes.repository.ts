import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid } from '@flagship/domain';
import { DATA_SOURCE } from '@flagship/persistence';
import type { FlagPatch } from '../flags/flag-patch';

export const CHANGE_REQUEST_STATES = ['pending', 'approved', 'applied', 'rejected', 'stale'] as const;
export type ChangeRequestState = (typeof CHANGE_REQUEST_STATES)[number];
export const SCHEDULED_CHANGE_STATES = ['scheduled', 'applied', 'failed', 'cancelled'] as const;
export type ScheduledChangeState = (typeof SCHEDULED_CHANGE_STATES)[number];

export interface ChangeComment {
  author: string;
  body: string;
  at: string;
}

/** One change request: a PATCH body made against one version of the flag (its ETag), and what became of it. */
export interface ChangeRequestRow {
  tenantId: string;
  environment: string;
  flagKey: string;
  id: string;
  patch: FlagPatch;
  baseVersion: string;
  /** When set, applying the approved request schedules the change for then instead of writing it now. */
  executeAt: Date | null;
  state: ChangeRequestState;
  author: string;
  comments: ChangeComment[];
  decidedBy: string | null;
  decidedAt: Date | null;
  appliedBy: string | null;
  appliedAt: Date | null;
  createdAt: Date;
}

/** One scheduled change: a PATCH body, the values its fields had when scheduled (`base`), and its outcome. */
export interface ScheduledChangeRow {
  tenantId: string;
  environment: string;
  flagKey: string;
  id: string;
  patch: FlagPatch;
  base: Record<string, unknown>;
  executeAt: Date;
  author: string;
  approvedBy: string | null;
  state: ScheduledChangeState;
  reason: string | null;
  finishedAt: Date | null;
  createdAt: Date;
}

export type NewChangeRequest = Pick<ChangeRequestRow, 'environment' | 'flagKey' | 'patch' | 'baseVersion' | 'executeAt' | 'author' | 'comments'>;
export type ChangeRequestUpdate = Partial<Pick<ChangeRequestRow, 'state' | 'decidedBy' | 'decidedAt' | 'appliedBy' | 'appliedAt'>>;
export type NewScheduledChange = Pick<ScheduledChangeRow, 'environment' | 'flagKey' | 'patch' | 'base' | 'executeAt' | 'author' | 'approvedBy'>;

/** How many rows a list answers, newest first: open ones are bounded per flag, closed ones are history. */
export const LIST_LIMIT = 100;

/**
 * Change requests and scheduled changes of one tenant (the port: SqlFlagChangesRepository over
 * Postgres, FakeFlagChangesRepository in memory). Tenant id first, in every statement. `claimDue` is
 * the one cross-tenant method: the executor's, which then names the row's tenant in every write.
 */
export abstract class FlagChangesRepository {
  abstract insertRequest(m: EntityManager, tenantId: string, fields: NewChangeRequest): Promise<ChangeRequestRow>;
  /** The request, locked until the transaction ends when `m` is given (so two approvals queue). */
  abstract findRequest(tenantId: string, environment: string, flagKey: string, id: string, m?: EntityManager): Promise<ChangeRequestRow | null>;
  abstract listRequests(tenantId: string, environment: string, flagKey: string): Promise<ChangeRequestRow[]>;
  /** Requests of the flag in the environment still pending or approved. */
  abstract countOpenRequests(m: EntityManager, tenantId: string, environment: string, flagKey: string): Promise<number>;
  abstract updateRequest(m: EntityManager, tenantId: string, id: string, changes: ChangeRequestUpdate): Promise<void>;
  abstract addComment(m: EntityManager, tenantId: string, id: string, comment: ChangeComment): Promise<void>;

  /** Waits for this tenant's turn (until the transaction ends), then counts its open requests and schedules, so concurrent creators never pass a tenant-wide bound. */
  abstract lockTenantAndCountOpen(m: EntityManager, tenantId: string): Promise<number>;

  abstract insertScheduled(m: EntityManager, tenantId: string, fields: NewScheduledChange): Promise<ScheduledChangeRow>;
  abstract findScheduled(tenantId: string, environment: string, flagKey: string, id: string, m?: EntityManager): Promise<ScheduledChangeRow | null>;
  abstract listScheduled(tenantId: string, environment: string, flagKey: string): Promise<ScheduledChangeRow[]>;
  abstract countScheduled(m: EntityManager, tenantId: string, environment: string, flagKey: string): Promise<number>;
  /**
   * The earliest change of any tenant due at `now` and still scheduled, locked until the transaction
   * ends; rows another transaction holds are skipped (FOR UPDATE SKIP LOCKED), so executors split the
   * work, and a row whose executor died unlocks when its connection goes and is claimed again.
   */
  abstract claimDue(m: EntityManager, now: Date): Promise<ScheduledChangeRow | null>;
  /** The change by id, locked, only while still scheduled (the executor's second try at recording a failure). */
  abstract claimScheduled(m: EntityManager, tenantId: string, id: string): Promise<ScheduledChangeRow | null>;
  /** Ends a scheduled change (applied, failed with its reason, or cancelled). */
  abstract finishScheduled(m: EntityManager, tenantId: string, id: string, state: Exclude<ScheduledChangeState, 'scheduled'>, reason: string | null, at: Date): Promise<void>;
}

interface RequestRecord {
  tenant_id: string;
  environment_key: string;
  flag_key: string;
  id: string;
  patch: FlagPatch;
  base_version: string;
  execute_at: Date | null;
  state: ChangeRequestState;
  author: string;
  comments: ChangeComment[];
  decided_by: string | null;
  decided_at: Date | null;
  applied_by: string | null;
  applied_at: Date | null;
  created_at: Date;
}

interface ScheduledRecord {
  tenant_id: string;
  environment_key: string;
  flag_key: string;
  id: string;
  patch: FlagPatch;
  base: Record<string, unknown>;
  execute_at: Date;
  author: string;
  approved_by: string | null;
  state: ScheduledChangeState;
  reason: string | null;
  finished_at: Date | null;
  created_at: Date;
}

const request = (r: RequestRecord): ChangeRequestRow => ({
  tenantId: r.tenant_id,
  environment: r.environment_key,
  flagKey: r.flag_key,
  id: r.id,
  patch: r.patch,
  baseVersion: r.base_version,
  executeAt: r.execute_at,
  state: r.state,
  author: r.author,
  comments: r.comments,
  decidedBy: r.decided_by,
  decidedAt: r.decided_at,
  appliedBy: r.applied_by,
  appliedAt: r.applied_at,
  createdAt: r.created_at,
});

const scheduled = (r: ScheduledRecord): ScheduledChangeRow => ({
  tenantId: r.tenant_id,
  environment: r.environment_key,
  flagKey: r.flag_key,
  id: r.id,
  patch: r.patch,
  base: r.base,
  executeAt: r.execute_at,
  author: r.author,
  approvedBy: r.approved_by,
  state: r.state,
  reason: r.reason,
  finishedAt: r.finished_at,
  createdAt: r.created_at,
});

const REQUEST_UPDATE_COLUMNS: Record<keyof ChangeRequestUpdate, string> = {
  state: 'state',
  decidedBy: 'decided_by',
  decidedAt: 'decided_at',
  appliedBy: 'applied_by',
  appliedAt: 'applied_at',
};

/** FlagChangesRepository over Postgres. */
@Injectable()
export class SqlFlagChangesRepository extends FlagChangesRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  async insertRequest(m: EntityManager, tenantId: string, f: NewChangeRequest): Promise<ChangeRequestRow> {
    const rows: RequestRecord[] = await m.query(
      `INSERT INTO change_requests (tenant_id, environment_key, flag_key, patch, base_version, execute_at, author, comments)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8::jsonb) RETURNING *`,
      [tenantId, f.environment, f.flagKey, JSON.stringify(f.patch), f.baseVersion, f.executeAt, f.author, JSON.stringify(f.comments)],
    );
    return request(rows[0]!);
  }

  findRequest(tenantId: string, environment: string, flagKey: string, id: string, m?: EntityManager): Promise<ChangeRequestRow | null> {
    return this.findIn('change_requests', request, [tenantId, environment, flagKey, id], m);
  }

  listRequests(tenantId: string, environment: string, flagKey: string): Promise<ChangeRequestRow[]> {
    return this.listIn('change_requests', 'created_at', request, [tenantId, environment, flagKey]);
  }

  countOpenRequests(m: EntityManager, tenantId: string, environment: string, flagKey: string): Promise<number> {
    return this.countIn(m, 'change_requests', `state IN ('pending', 'approved')`, [tenantId, environment, flagKey]);
  }

  async updateRequest(m: EntityManager, tenantId: string, id: string, changes: ChangeRequestUpdate): Promise<void> {
    const values: unknown[] = [tenantId, id];
    const sets = ['updated_at = now()'];
    for (const [field, value] of Object.entries(changes)) {
      values.push(value);
      sets.push(`${REQUEST_UPDATE_COLUMNS[field as keyof ChangeRequestUpdate]} = $${values.length}`);
    }
    await m.query(`UPDATE change_requests SET ${sets.join(', ')} WHERE tenant_id = $1 AND id = $2`, values);
  }

  async addComment(m: EntityManager, tenantId: string, id: string, comment: ChangeComment): Promise<void> {
    await m.query(`UPDATE change_requests SET comments = comments || jsonb_build_array($3::jsonb), updated_at = now() WHERE tenant_id = $1 AND id = $2`, [
      tenantId,
      id,
      JSON.stringify(comment),
    ]);
  }

  async lockTenantAndCountOpen(m: EntityManager, tenantId: string): Promise<number> {
    await m.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`flag-changes:${tenantId}`]);
    const [row] = (await m.query(
      `SELECT (SELECT count(*) FROM change_requests WHERE tenant_id = $1 AND state IN ('pending', 'approved'))
            + (SELECT count(*) FROM scheduled_changes WHERE tenant_id = $1 AND state = 'scheduled') AS n`,
      [tenantId],
    )) as Array<{ n: string }>;
    return Number(row?.n ?? 0);
  }

  async insertScheduled(m: EntityManager, tenantId: string, f: NewScheduledChange): Promise<ScheduledChangeRow> {
    const rows: ScheduledRecord[] = await m.query(
      `INSERT INTO scheduled_changes (tenant_id, environment_key, flag_key, patch, base, execute_at, author, approved_by)
       VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7, $8) RETURNING *`,
      [tenantId, f.environment, f.flagKey, JSON.stringify(f.patch), JSON.stringify(f.base), f.executeAt, f.author, f.approvedBy],
    );
    return scheduled(rows[0]!);
  }

  findScheduled(tenantId: string, environment: string, flagKey: string, id: string, m?: EntityManager): Promise<ScheduledChangeRow | null> {
    return this.findIn('scheduled_changes', scheduled, [tenantId, environment, flagKey, id], m);
  }

  listScheduled(tenantId: string, environment: string, flagKey: string): Promise<ScheduledChangeRow[]> {
    return this.listIn('scheduled_changes', 'execute_at', scheduled, [tenantId, environment, flagKey]);
  }

  countScheduled(m: EntityManager, tenantId: string, environment: string, flagKey: string): Promise<number> {
    return this.countIn(m, 'scheduled_changes', `state = 'scheduled'`, [tenantId, environment, flagKey]);
  }

  async claimDue(m: EntityManager, now: Date): Promise<ScheduledChangeRow | null> {
    const rows: ScheduledRecord[] = await m.query(
      `SELECT * FROM scheduled_changes WHERE state = 'scheduled' AND execute_at <= $1 ORDER BY execute_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
      [now],
    );
    return rows[0] ? scheduled(rows[0]) : null;
  }

  async claimScheduled(m: EntityManager, tenantId: string, id: string): Promise<ScheduledChangeRow | null> {
    const rows: ScheduledRecord[] = await m.query(`SELECT * FROM scheduled_changes WHERE tenant_id = $1 AND id = $2 AND state = 'scheduled' FOR UPDATE SKIP LOCKED`, [tenantId, id]);
    return rows[0] ? scheduled(rows[0]) : null;
  }

  async finishScheduled(m: EntityManager, tenantId: string, id: string, state: Exclude<ScheduledChangeState, 'scheduled'>, reason: string | null, at: Date): Promise<void> {
    await m.query(`UPDATE scheduled_changes SET state = $3, reason = $4, finished_at = $5 WHERE tenant_id = $1 AND id = $2`, [tenantId, id, state, reason, at]);
  }

  // The two tables are keyed alike (tenant, environment, flag, id): one statement of each kind serves both.
  private async findIn<R, T>(table: string, map: (r: R) => T, [tenantId, environment, flagKey, id]: [string, string, string, string], m?: EntityManager): Promise<T | null> {
    // Ids are uuids: another string names no row (rather than failing the cast).
    if (!isUuid(id)) return null;
    const rows: R[] = await (m ?? this.ds.manager).query(
      `SELECT * FROM ${table} WHERE tenant_id = $1 AND environment_key = $2 AND flag_key = $3 AND id = $4${m ? ' FOR UPDATE' : ''}`,
      [tenantId, environment, flagKey, id],
    );
    return rows[0] ? map(rows[0]) : null;
  }

  private async listIn<R, T>(table: string, orderBy: string, map: (r: R) => T, params: [string, string, string]): Promise<T[]> {
    const rows: R[] = await this.ds.query(`SELECT * FROM ${table} WHERE tenant_id = $1 AND environment_key = $2 AND flag_key = $3 ORDER BY ${orderBy} DESC, id DESC LIMIT $4`, [...params, LIST_LIMIT]);
    return rows.map(map);
  }

  private async countIn(m: EntityManager, table: string, open: string, params: [string, string, string]): Promise<number> {
    const [row] = (await m.query(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1 AND environment_key = $2 AND flag_key = $3 AND ${open}`, params)) as Array<{ n: number }>;
    return row?.n ?? 0;
  }
}
