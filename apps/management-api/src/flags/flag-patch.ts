import type { FlagEntity, FlagEnvironmentEntity } from './flag.entity';
import type { FlagGlobalFields, FlagRow, FlagTargetingFields } from './flags.repository';

/** A PATCH body: global fields, and the request's environment's targeting (null resets offValue and salt). */
export type FlagPatch = Partial<FlagGlobalFields & FlagTargetingFields>;

const GLOBAL_FIELDS: ReadonlyArray<keyof FlagGlobalFields> = ['name', 'description', 'defaultValue', 'tags', 'projectId', 'variations', 'clientSideAvailability'];
const TARGETING_FIELDS: ReadonlyArray<keyof FlagTargetingFields> = ['enabled', 'offValue', 'targets', 'rules', 'prerequisites', 'salt'];

/** A PATCH applied to a flag's rows, in memory: what each row becomes, what to write, and what to audit. */
export interface AppliedPatch {
  flag: FlagEntity;
  env: FlagEnvironmentEntity;
  /** The global fields sent (to write on the flag row). */
  global: Partial<FlagGlobalFields>;
  /** The targeting fields sent (to write on the environment's row). */
  targeting: Partial<FlagTargetingFields>;
  /** field -> {from, to}, the fields sent, for the audit record. */
  changes: Record<string, { from: unknown; to: unknown }>;
}

/**
 * Only what was sent changes: a DTO instance holds every declared field, undefined when not sent,
 * so a PATCH of rules keeps the off value; a null sent is a value (it resets offValue and salt).
 */
export function applyPatch(row: FlagRow, patch: FlagPatch): AppliedPatch {
  const global = sent<FlagGlobalFields>(patch, GLOBAL_FIELDS);
  const targeting = sent<FlagTargetingFields>(patch, TARGETING_FIELDS);
  return {
    flag: { ...row.flag, ...global },
    env: { ...row.env, ...targeting },
    global,
    targeting,
    changes: { ...changesOf(row.flag, global, GLOBAL_FIELDS), ...changesOf(row.env, targeting, TARGETING_FIELDS) },
  };
}

/** Whether the patch changes anything, and where: global fields are in every environment. */
export const changesGlobals = (p: AppliedPatch): boolean => Object.keys(p.global).length > 0;
export const changesTargeting = (p: AppliedPatch): boolean => Object.keys(p.targeting).length > 0;

function sent<T>(patch: Partial<T>, fields: ReadonlyArray<keyof T>): Partial<T> {
  const out: Partial<T> = {};
  for (const f of fields) if (patch[f] !== undefined) out[f] = patch[f];
  return out;
}

function changesOf<T>(before: T, after: Partial<T>, fields: ReadonlyArray<keyof T>): Record<string, { from: unknown; to: unknown }> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const f of fields) if (after[f] !== undefined) changes[String(f)] = { from: before[f], to: after[f] };
  return changes;
}
