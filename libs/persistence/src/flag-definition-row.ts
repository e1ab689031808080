import type { FlagDefinition, FlagType, JsonValue, Prerequisite, Rule, Target, Variation } from '@flagship/flag-evaluation';

/**
 * The columns of one flag as seen in one environment (`flags f` joined with `flag_environments fe`),
 * read by management-api's export and the flag store (libs/flag-store) alike.
 */
export const FLAG_DEFINITION_COLUMNS = `f.key, f.type, f.default_value, f.variations, f.version AS flag_version,
         fe.enabled, fe.off_value, fe.targets, fe.rules, fe.prerequisites, fe.salt, fe.version AS env_version`;

export interface FlagDefinitionRow {
  key: string;
  type: FlagType;
  default_value: JsonValue;
  variations: Variation[];
  flag_version: number;
  enabled: boolean;
  off_value: JsonValue | null;
  targets: Target[];
  rules: Rule[];
  prerequisites: Prerequisite[];
  salt: string | null;
  env_version: number;
}

/** One row in the evaluator's shape; `version` is one number that grows with either row's version. */
export function flagDefinitionFromRow(r: FlagDefinitionRow): FlagDefinition {
  const def: FlagDefinition = {
    key: r.key,
    type: r.type,
    defaultValue: r.default_value,
    variations: r.variations,
    enabled: r.enabled,
    targets: r.targets,
    rules: r.rules,
    prerequisites: r.prerequisites,
    version: r.flag_version * 100000 + r.env_version,
  };
  if (r.off_value !== null && r.off_value !== undefined) def.offValue = r.off_value;
  if (typeof r.salt === 'string') def.salt = r.salt;
  return def;
}
