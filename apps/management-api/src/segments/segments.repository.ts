import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import type { SegmentDefinition } from '@flagship/flag-evaluation';
import { DATA_SOURCE, segmentDefinitionFromRow } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';

/** What a segment holds besides its names: the fields evaluators read (the `definition` column). */
export type SegmentBody = Pick<SegmentDefinition, 'included' | 'excluded' | 'includedContexts' | 'excludedContexts' | 'rules' | 'salt'>;

/** One segment in one environment, as stored. */
export interface SegmentRow {
  tenantId: string;
  environment: string;
  key: string;
  id: string;
  name: string;
  description: string;
  definition: SegmentBody;
  /** Its definition's size as evaluators hold it (segmentDefinitionBytes), what the byte quota sums. */
  definitionBytes: number;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export type NewSegmentFields = Pick<SegmentRow, 'key' | 'name' | 'description' | 'definition' | 'definitionBytes'>;
export type SegmentChanges = Partial<Pick<SegmentRow, 'name' | 'description' | 'definition' | 'definitionBytes'>>;

export interface SegmentAuditRecord {
  environment: string;
  segmentKey: string;
  action: 'create' | 'update' | 'import' | 'delete';
  actor: string;
  changes: Record<string, unknown>;
}

export interface SegmentAuditRow extends SegmentAuditRecord {
  id: string;
  createdAt: Date;
}

/**
 * Segments of one tenant, per environment (the port: SqlSegmentsRepository over Postgres,
 * FakeSegmentsRepository in memory). Every method takes the tenant id first and names it in every
 * statement: another tenant's segment reads as missing. Methods taking a transaction write in it.
 */
export abstract class SegmentsRepository {
  abstract find(tenantId: string, environment: string, key: string, m?: EntityManager): Promise<SegmentRow | null>;
  /** The row, locked for update until the transaction ends, so concurrent writers queue. */
  abstract lock(m: EntityManager, tenantId: string, environment: string, key: string): Promise<SegmentRow | null>;
  /** Up to `limit + 1` rows after `after`, oldest first (the extra one tells there is a next page). */
  abstract list(tenantId: string, environment: string, limit: number, after?: PageCursor): Promise<SegmentRow[]>;
  /** A key taken in the tenant's environment is Postgres' unique violation (isUniqueViolation). */
  abstract insert(m: EntityManager, tenantId: string, environment: string, fields: NewSegmentFields): Promise<SegmentRow>;
  /** Applied only while the row is at `expectedVersion`, bumping it; false otherwise. */
  abstract update(m: EntityManager, tenantId: string, environment: string, key: string, expectedVersion: number, changes: SegmentChanges): Promise<boolean>;
  abstract delete(m: EntityManager, tenantId: string, environment: string, key: string): Promise<boolean>;
  /** The rows of these keys that exist, locked for update in key order (concurrent writers queue instead of deadlocking). */
  abstract lockMany(m: EntityManager, tenantId: string, environment: string, keys: readonly string[]): Promise<Map<string, SegmentRow>>;
  /** Creates each segment, or replaces the one of its key (bumping its version): one statement whatever the number. */
  abstract upsertMany(m: EntityManager, tenantId: string, environment: string, segments: readonly NewSegmentFields[]): Promise<void>;
  /** Every segment of the environment in the evaluator's shape, by key (what a flag set is compiled with). */
  abstract definitions(tenantId: string, environment: string, m?: EntityManager): Promise<SegmentDefinition[]>;
  /** Keys of the environment's flags with a `segmentMatch` clause naming `key` in any rule, sorted. */
  abstract flagsUsing(tenantId: string, environment: string, key: string, m?: EntityManager): Promise<string[]>;
  /** Keys of the environment's other segments whose rules name `key` through `segmentMatch`, sorted. */
  abstract segmentsUsing(tenantId: string, environment: string, key: string, m?: EntityManager): Promise<string[]>;
  abstract audit(m: EntityManager, tenantId: string, record: SegmentAuditRecord): Promise<void>;
  /** One statement, in the order given. */
  abstract auditMany(m: EntityManager, tenantId: string, records: readonly SegmentAuditRecord[]): Promise<void>;
  /** The segment's audit trail in the environment, oldest first. */
  abstract auditTrail(tenantId: string, environment: string, key: string): Promise<SegmentAuditRow[]>;
}

interface Row {
  tenant_id: string;
  environment_key: string;
  key: string;
  id: string;
  name: string;
  description: string;
  definition: SegmentBody;
  definition_bytes: number;
  version: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'tenant_id, environment_key, key, id, name, description, definition, definition_bytes, version, created_at, updated_at';

const rowOf = (r: Row): SegmentRow => ({
  tenantId: r.tenant_id,
  environment: r.environment_key,
  key: r.key,
  id: r.id,
  name: r.name,
  description: r.description,
  definition: r.definition,
  definitionBytes: r.definition_bytes,
  version: r.version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A segment in the evaluator's shape (key and version beside its stored definition), as the flag store reads it too. */
export const segmentDefinitionOf = segmentDefinitionFromRow;

/** What `@>` looks for: a rule with a `segmentMatch` clause whose values hold the key. */
const usingClause = (key: string): string => JSON.stringify([{ clauses: [{ op: 'segmentMatch', values: [key] }] }]);

@Injectable()
export class SqlSegmentsRepository extends SegmentsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  private q(m?: EntityManager): EntityManager {
    return m ?? this.ds.manager;
  }

  async find(tenantId: string, environment: string, key: string, m?: EntityManager): Promise<SegmentRow | null> {
    const rows: Row[] = await this.q(m).query(`SELECT ${COLUMNS} FROM segments WHERE tenant_id = $1 AND environment_key = $2 AND key = $3`, [tenantId, environment, key]);
    return rows[0] ? rowOf(rows[0]) : null;
  }

  async lock(m: EntityManager, tenantId: string, environment: string, key: string): Promise<SegmentRow | null> {
    const rows: Row[] = await m.query(`SELECT ${COLUMNS} FROM segments WHERE tenant_id = $1 AND environment_key = $2 AND key = $3 FOR UPDATE`, [tenantId, environment, key]);
    return rows[0] ? rowOf(rows[0]) : null;
  }

  async list(tenantId: string, environment: string, limit: number, after?: PageCursor): Promise<SegmentRow[]> {
    const rows: Row[] = await this.ds.manager.query(
      `SELECT ${COLUMNS} FROM segments
        WHERE tenant_id = $1 AND environment_key = $2 AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::uuid))
        ORDER BY created_at, id LIMIT $5`,
      [tenantId, environment, after?.at ?? null, after?.id ?? null, limit + 1],
    );
    return rows.map(rowOf);
  }

  async insert(m: EntityManager, tenantId: string, environment: string, f: NewSegmentFields): Promise<SegmentRow> {
    const rows: Row[] = await m.query(
      `INSERT INTO segments (tenant_id, environment_key, key, name, description, definition, definition_bytes)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7) RETURNING ${COLUMNS}`,
      [tenantId, environment, f.key, f.name, f.description, JSON.stringify(f.definition), f.definitionBytes],
    );
    return rowOf(rows[0]!);
  }

  async update(m: EntityManager, tenantId: string, environment: string, key: string, expectedVersion: number, changes: SegmentChanges): Promise<boolean> {
    const [, affected] = (await m.query(
      `UPDATE segments SET name = coalesce($5, name), description = coalesce($6, description), definition = coalesce($7::jsonb, definition),
              definition_bytes = coalesce($8, definition_bytes), version = version + 1, updated_at = now()
        WHERE tenant_id = $1 AND environment_key = $2 AND key = $3 AND version = $4`,
      [
        tenantId,
        environment,
        key,
        expectedVersion,
        changes.name ?? null,
        changes.description ?? null,
        changes.definition === undefined ? null : JSON.stringify(changes.definition),
        changes.definitionBytes ?? null,
      ],
    )) as [unknown, number];
    return affected === 1;
  }

  async delete(m: EntityManager, tenantId: string, environment: string, key: string): Promise<boolean> {
    const [, affected] = (await m.query('DELETE FROM segments WHERE tenant_id = $1 AND environment_key = $2 AND key = $3', [tenantId, environment, key])) as [unknown, number];
    return affected === 1;
  }

  async lockMany(m: EntityManager, tenantId: string, environment: string, keys: readonly string[]): Promise<Map<string, SegmentRow>> {
    if (keys.length === 0) return new Map();
    const rows: Row[] = await m.query(`SELECT ${COLUMNS} FROM segments WHERE tenant_id = $1 AND environment_key = $2 AND key = ANY($3::text[]) ORDER BY key FOR UPDATE`, [
      tenantId,
      environment,
      [...keys],
    ]);
    return new Map(rows.map((r) => [r.key, rowOf(r)]));
  }

  async upsertMany(m: EntityManager, tenantId: string, environment: string, segments: readonly NewSegmentFields[]): Promise<void> {
    if (segments.length === 0) return;
    await m.query(
      `INSERT INTO segments (tenant_id, environment_key, key, name, description, definition, definition_bytes)
       SELECT $1, $2, x.key, x.name, x.description, x.definition, x.definition_bytes
         FROM jsonb_to_recordset($3::jsonb) AS x(key text, name text, description text, definition jsonb, definition_bytes integer)
       ON CONFLICT (tenant_id, environment_key, key) DO UPDATE
          SET name = excluded.name, description = excluded.description, definition = excluded.definition, definition_bytes = excluded.definition_bytes,
              version = segments.version + 1, updated_at = now()`,
      [tenantId, environment, JSON.stringify(segments.map((s) => ({ key: s.key, name: s.name, description: s.description, definition: s.definition, definition_bytes: s.definitionBytes })))],
    );
  }

  async definitions(tenantId: string, environment: string, m?: EntityManager): Promise<SegmentDefinition[]> {
    const rows: Row[] = await this.q(m).query(`SELECT ${COLUMNS} FROM segments WHERE tenant_id = $1 AND environment_key = $2 ORDER BY key`, [tenantId, environment]);
    return rows.map((r) => segmentDefinitionOf(rowOf(r)));
  }

  async flagsUsing(tenantId: string, environment: string, key: string, m?: EntityManager): Promise<string[]> {
    const rows: Array<{ key: string }> = await this.q(m).query(
      `SELECT f.key FROM flag_environments fe JOIN flags f ON f.tenant_id = fe.tenant_id AND f.id = fe.flag_id
        WHERE fe.tenant_id = $1 AND fe.environment_key = $2 AND fe.rules @> $3::jsonb ORDER BY f.key`,
      [tenantId, environment, usingClause(key)],
    );
    return rows.map((r) => r.key);
  }

  async segmentsUsing(tenantId: string, environment: string, key: string, m?: EntityManager): Promise<string[]> {
    const rows: Array<{ key: string }> = await this.q(m).query(
      `SELECT key FROM segments WHERE tenant_id = $1 AND environment_key = $2 AND key <> $3 AND definition -> 'rules' @> $4::jsonb ORDER BY key`,
      [tenantId, environment, key, usingClause(key)],
    );
    return rows.map((r) => r.key);
  }

  async audit(m: EntityManager, tenantId: string, r: SegmentAuditRecord): Promise<void> {
    await m.query(`INSERT INTO segment_audit (tenant_id, environment_key, segment_key, action, actor, changes) VALUES ($1, $2, $3, $4, $5, $6::jsonb)`, [
      tenantId,
      r.environment,
      r.segmentKey,
      r.action,
      r.actor,
      JSON.stringify(r.changes),
    ]);
  }

  async auditMany(m: EntityManager, tenantId: string, records: readonly SegmentAuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    await m.query(
      `INSERT INTO segment_audit (tenant_id, environment_key, segment_key, action, actor, changes)
       SELECT $1, x.doc->>'environment', x.doc->>'segmentKey', x.doc->>'action', x.doc->>'actor', x.doc->'changes'
         FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(doc, ord)
        ORDER BY x.ord`,
      [tenantId, JSON.stringify(records)],
    );
  }

  async auditTrail(tenantId: string, environment: string, key: string): Promise<SegmentAuditRow[]> {
    const rows: Array<{ id: string; environment_key: string; segment_key: string; action: SegmentAuditRecord['action']; actor: string; changes: Record<string, unknown>; created_at: Date }> =
      await this.ds.manager.query(
        `SELECT id::text, environment_key, segment_key, action, actor, changes, created_at FROM segment_audit
          WHERE tenant_id = $1 AND environment_key = $2 AND segment_key = $3 ORDER BY id`,
        [tenantId, environment, key],
      );
    return rows.map((r) => ({ id: r.id, environment: r.environment_key, segmentKey: r.segment_key, action: r.action, actor: r.actor, changes: r.changes, createdAt: r.created_at }));
  }
}
