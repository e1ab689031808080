import { segmentEtag } from './segment-rules';
import type { SegmentAuditEntryDto, SegmentDto } from './segments.dto';
import type { SegmentAuditRow } from './segments.repository';
import type { SegmentView } from './segments.service';

export { segmentEtag };

export function toSegmentDto({ row, warnings }: SegmentView): SegmentDto {
  const d = row.definition;
  return {
    key: row.key,
    name: row.name,
    description: row.description,
    environment: row.environment,
    included: d.included,
    excluded: d.excluded,
    includedContexts: d.includedContexts,
    excludedContexts: d.excludedContexts,
    rules: d.rules,
    salt: d.salt ?? null,
    version: row.version,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    warnings,
  };
}

export const toSegmentAuditEntryDto = (a: SegmentAuditRow): SegmentAuditEntryDto => ({ action: a.action, actor: a.actor, environment: a.environment, changes: a.changes, at: a.createdAt.toISOString() });
