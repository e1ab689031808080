import type { ChangeRequestDto, ScheduledChangeDto } from './flag-changes.dto';
import type { ChangeRequestRow, ScheduledChangeRow } from './flag-changes.repository';

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export const toChangeRequestDto = (r: ChangeRequestRow): ChangeRequestDto => ({
  id: r.id,
  flagKey: r.flagKey,
  environment: r.environment,
  patch: r.patch as Record<string, unknown>,
  baseVersion: r.baseVersion,
  executeAt: iso(r.executeAt),
  state: r.state,
  author: r.author,
  comments: r.comments,
  decidedBy: r.decidedBy,
  decidedAt: iso(r.decidedAt),
  appliedBy: r.appliedBy,
  appliedAt: iso(r.appliedAt),
  createdAt: r.createdAt.toISOString(),
});

export const toScheduledChangeDto = (r: ScheduledChangeRow): ScheduledChangeDto => ({
  id: r.id,
  flagKey: r.flagKey,
  environment: r.environment,
  patch: r.patch as Record<string, unknown>,
  executeAt: r.executeAt.toISOString(),
  author: r.author,
  approvedBy: r.approvedBy,
  state: r.state,
  reason: r.reason,
  finishedAt: iso(r.finishedAt),
  createdAt: r.createdAt.toISOString(),
});
