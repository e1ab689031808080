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

/** Changes with every write of the segment (its version) and when it is deleted and made again (its id). */
export const SEGMENT_FINGERPRINT = `id || ':' || version`;
