import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import {
  DATA_SOURCE,
  FLAG_DEFINITION_COLUMNS,
  type FlagDefinitionRow,
  flagDefinitionFromRow,
  SEGMENT_DEFINITION_COLUMNS,
  type SegmentDefinitionRow,
  segmentDefinitionFromRow,
  SEGMENT_FINGERPRINT,
} from '@flagship/persistence';
import type { FlagDefinition, SegmentDefinition } from '@flagship/flag-evaluation';

/** One flag as a flag store holds it: seen in one environment, with its project and what tells whether it changed. */
export interface StoredFlag {
  key: string;
  projectId: string | null;
  /** Changes whenever the flag, its environment row or its project changes. */
  fingerprint: string;
  definition: FlagDefinition;
}

/** One segment as a flag store holds it (flags' segmentMatch clauses name it), with what tells whether it changed. */
export interface StoredSegment {
  key: string;
  fingerprint: string;
  definition: SegmentDefinition;
}

/**
 * Every write bumps a version and updated_at, so comparing fingerprints finds what changed without
 * reading jsonb (cheap at 100,000 flags). The project is part of it: deleting a project sets its
 * flags' project_id to NULL without a version bump.
 */
const FINGERPRINT = `concat_ws(':', f.id, f.version, f.updated_at, fe.version, fe.updated_at, f.project_id)`;

// A flag exists in an environment when it has a row there (as in management-api's export).
const FROM = `
    FROM flags f
    JOIN flag_environments fe ON fe.tenant_id = f.tenant_id AND fe.flag_id = f.id AND fe.environment_key = $2
   WHERE f.tenant_id = $1`;

const SELECT_FLAGS = `
  SELECT ${FLAG_DEFINITION_COLUMNS}, f.project_id, ${FINGERPRINT} AS fingerprint
  ${FROM}`;

/** Keys per query when re-reading many flags (a reconcile after a long outage). */
const KEYS_PER_QUERY = 5000;

type Row = FlagDefinitionRow & { project_id: string | null; fingerprint: string };

/** What the flag store reads (the port its unit specs fake). */
export interface FlagStoreReads {
  findAll(tenantId: string, environment: string): Promise<StoredFlag[]>;
  findByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredFlag[]>;
  fingerprints(tenantId: string, environment: string): Promise<Map<string, string>>;
  /** What the flags of the tenant-environment take, as the writes stored it (definition_bytes), without reading them. */
  storedBytes(tenantId: string, environment: string): Promise<number>;
  findSegments(tenantId: string, environment: string): Promise<StoredSegment[]>;
  /** The named segments that exist. */
  findSegmentsByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredSegment[]>;
  segmentFingerprints(tenantId: string, environment: string): Promise<Map<string, string>>;
}

/** The reads of the flag store: one tenant-environment's flags, read-only; every query names the tenant. */
@Injectable()
export class FlagStoreRepository implements FlagStoreReads {
  constructor(@Inject(DATA_SOURCE) private readonly dataSource: DataSource) {}

  async findAll(tenantId: string, environment: string): Promise<StoredFlag[]> {
    const rows: Row[] = await this.dataSource.query(SELECT_FLAGS, [tenantId, environment]);
    return rows.map(toStoredFlag);
  }

  /** The named flags that exist; a key without a row is gone (deleted, or not in this environment). */
  async findByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredFlag[]> {
    const out: StoredFlag[] = [];
    for (let i = 0; i < keys.length; i += KEYS_PER_QUERY) {
      const rows: Row[] = await this.dataSource.query(`${SELECT_FLAGS} AND f.key = ANY($3::text[])`, [tenantId, environment, keys.slice(i, i + KEYS_PER_QUERY)]);
      for (const row of rows) out.push(toStoredFlag(row));
    }
    return out;
  }

  async storedBytes(tenantId: string, environment: string): Promise<number> {
    const [row] = (await this.dataSource.query(
      'SELECT coalesce(sum(definition_bytes), 0)::float8 AS bytes FROM flag_environments WHERE tenant_id = $1 AND environment_key = $2',
      [tenantId, environment],
    )) as Array<{ bytes: number }>;
    return row?.bytes ?? 0;
  }

  async findSegments(tenantId: string, environment: string): Promise<StoredSegment[]> {
    const rows: SegmentRow[] = await this.dataSource.query(SELECT_SEGMENTS, [tenantId, environment]);
    return rows.map(toStoredSegment);
  }

  async findSegmentsByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredSegment[]> {
    if (keys.length === 0) return [];
    const rows: SegmentRow[] = await this.dataSource.query(`${SELECT_SEGMENTS} AND key = ANY($3::text[])`, [tenantId, environment, [...keys]]);
    return rows.map(toStoredSegment);
  }

  async segmentFingerprints(tenantId: string, environment: string): Promise<Map<string, string>> {
    const rows: Array<{ key: string; fingerprint: string }> = await this.dataSource.query(
      `SELECT key, ${SEGMENT_FINGERPRINT} AS fingerprint FROM segments WHERE tenant_id = $1 AND environment_key = $2`,
      [tenantId, environment],
    );
    return new Map(rows.map((r) => [r.key, r.fingerprint]));
  }

  /** key -> fingerprint of every flag of the tenant-environment, to find what a missed announcement left stale. */
  async fingerprints(tenantId: string, environment: string): Promise<Map<string, string>> {
    const rows: Array<{ key: string; fingerprint: string }> = await this.dataSource.query(`SELECT f.key, ${FINGERPRINT} AS fingerprint ${FROM}`, [tenantId, environment]);
    return new Map(rows.map((r) => [r.key, r.fingerprint]));
  }
}

const SELECT_SEGMENTS = `SELECT ${SEGMENT_DEFINITION_COLUMNS}, ${SEGMENT_FINGERPRINT} AS fingerprint FROM segments WHERE tenant_id = $1 AND environment_key = $2`;

type SegmentRow = SegmentDefinitionRow & { fingerprint: string };

function toStoredSegment(row: SegmentRow): StoredSegment {
  return { key: row.key, fingerprint: row.fingerprint, definition: segmentDefinitionFromRow(row) };
}

function toStoredFlag(row: Row): StoredFlag {
  return { key: row.key, projectId: row.project_id, fingerprint: row.fingerprint, definition: flagDefinitionFromRow(row) };
}
