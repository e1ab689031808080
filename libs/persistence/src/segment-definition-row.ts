import { createHash } from 'node:crypto';
import type { SegmentDefinition } from '@flagship/flag-evaluation';

/**
 * The columns of a segment (the `segments` table) that evaluators read, by management-api and the
 * flag store alike. `definition` holds LaunchDarkly's fields; key, name and version are columns.
 */
export const SEGMENT_DEFINITION_COLUMNS = 'key, id, name, definition, version';

export interface SegmentDefinitionRow {
  key: string;
  id: string;
  name: string;
  definition: Pick<SegmentDefinition, 'included' | 'excluded' | 'includedContexts' | 'excludedContexts' | 'rules' | 'salt'>;
  version: number;
}

/** One row in the evaluator's shape. */
export function segmentDefinitionFromRow(r: Pick<SegmentDefinitionRow, 'key' | 'name' | 'definition' | 'version'>): SegmentDefinition {
  return { key: r.key, name: r.name, ...r.definition, version: r.version };
}

/**
 * What one environment's segments are at: changes with any segment written, added or deleted. SQL
 * computes the same from the table (SEGMENTS_FINGERPRINT_SQL), so a reconcile compares without reading
 * the definitions. Rows in code-point order of key (`COLLATE "C"`).
 */
export function segmentsFingerprint(rows: ReadonlyArray<Pick<SegmentDefinitionRow, 'key' | 'id' | 'version'>>): string {
  return createHash('md5')
    .update(rows.map((r) => `${r.key}:${r.id}:${r.version}`).join(','))
    .digest('hex');
}

/** segmentsFingerprint in SQL, of the segments of tenant $1 in environment $2. */
export const SEGMENTS_FINGERPRINT_SQL = `SELECT md5(coalesce(string_agg(key || ':' || id || ':' || version, ',' ORDER BY key COLLATE "C"), '')) AS fingerprint
    FROM segments WHERE tenant_id = $1 AND environment_key = $2`;
