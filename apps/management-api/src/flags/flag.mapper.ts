import { checkFlagDefinition, type EvaluationResult, FLAG_FILE_VERSION, type FlagDefinition, type SegmentDefinition, type Variation } from '@flagship/flag-evaluation';
import { flagDefinitionFromRow } from '@flagship/persistence';
import type { FlagAuditEntryDto } from './flag-audit.dto';
import type { FlagAuditEntity, FlagEntity, FlagEnvironmentEntity } from './flag.entity';
import type { FlagExportDto } from './flag-targeting.dto';
import type { EvaluationResultDto, FlagDto, FlagVariationDto, ImportFlagsResultDto } from './flags.dto';
import type { FlagRow } from './flags.repository';

/** The flag's two rows in the evaluator's shape (as the flag store reads them from Postgres). */
export function definitionOf(flag: FlagEntity, env: FlagEnvironmentEntity): FlagDefinition {
  return flagDefinitionFromRow({
    key: flag.key,
    type: flag.type,
    default_value: flag.defaultValue,
    variations: flag.variations,
    flag_version: flag.version,
    enabled: env.enabled,
    off_value: env.offValue,
    targets: env.targets,
    rules: env.rules,
    prerequisites: env.prerequisites,
    salt: env.salt,
    env_version: env.version,
    client_side_availability: flag.clientSideAvailability,
  });
}

/** The entity tag of a flag as seen in one environment: either row's change makes another. */
export const etagOf = (r: FlagRow): string => `"${r.flag.version}.${r.env.version}"`;

export const toVariationDto = (v: Variation): FlagVariationDto => ({ id: v.id, name: v.name, value: v.value, description: v.description ?? '', weight: v.weight });

export function toFlagDto(r: FlagRow): FlagDto {
  const updated = r.env.updatedAt > r.flag.updatedAt ? r.env.updatedAt : r.flag.updatedAt;
  return {
    id: r.flag.id,
    key: r.flag.key,
    name: r.flag.name,
    type: r.flag.type,
    enabled: r.env.enabled,
    defaultValue: r.flag.defaultValue,
    description: r.flag.description,
    tags: r.flag.tags,
    projectId: r.flag.projectId,
    createdAt: r.flag.createdAt.toISOString(),
    updatedAt: updated.toISOString(),
    variations: r.flag.variations.map(toVariationDto),
    clientSideAvailability: { usingEnvironmentId: r.flag.clientSideAvailability.usingEnvironmentId, usingMobileKey: r.flag.clientSideAvailability.usingMobileKey },
    environment: r.env.environmentKey,
    offValue: r.env.offValue,
    targets: r.env.targets,
    rules: r.env.rules,
    prerequisites: r.env.prerequisites,
    salt: r.env.salt,
    version: `${r.flag.version}.${r.env.version}`,
    lastEvaluatedAt: r.lastEvaluatedAt?.toISOString() ?? null,
    servingOneVariationSince: r.env.servingOneVariationSince?.toISOString() ?? null,
    // Accepted but never-matching data (LaunchDarkly's semantics), shown on every read so a typo stays visible.
    warnings: checkFlagDefinition(definitionOf(r.flag, r.env)).warnings,
  };
}

export function toEvaluationDto(key: string, r: EvaluationResult): EvaluationResultDto {
  const out: EvaluationResultDto = { key, enabled: r.enabled, value: r.value, reason: r.reason };
  if (r.variationId !== undefined) out.variationId = r.variationId;
  if (r.ruleId !== undefined) out.ruleId = r.ruleId;
  if (r.ruleIndex !== undefined) out.ruleIndex = r.ruleIndex;
  if (r.errorKind !== undefined) out.errorKind = r.errorKind;
  return out;
}

/** The flag file orep-server serves: the definitions by key. */
export function toFlagFileDto(tenantId: string, environment: string, definitions: readonly FlagDefinition[], segments: readonly SegmentDefinition[], generatedAt: Date): FlagExportDto {
  const flags = [...definitions].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { version: FLAG_FILE_VERSION, tenantId, environment, generatedAt: generatedAt.toISOString(), flags, segments: [...segments] };
}

export const toAuditEntryDto = (a: FlagAuditEntity): FlagAuditEntryDto => ({
  action: a.action,
  actor: a.actor,
  environment: a.environmentKey,
  changes: a.changes,
  at: a.createdAt.toISOString(),
});

/** What an import did, with every imported flag as now seen in the environment. */
export interface ImportResult {
  environment: string;
  created: string[];
  replaced: string[];
  /** The import's segments: keys created, and keys of existing ones replaced. */
  segments: { created: string[]; replaced: string[] };
  skipped: Array<{ key: string; reason: string }>;
  rows: FlagRow[];
}

export const toImportResultDto = (r: ImportResult): ImportFlagsResultDto => ({
  environment: r.environment,
  created: r.created,
  replaced: r.replaced,
  segments: r.segments,
  skipped: r.skipped,
  flags: r.rows.map(toFlagDto),
});
