import { type ClientSideAvailability, clientSideAvailabilityOf, type FlagDefinition, type FlagType, type JsonValue, type Prerequisite, type Rule, SERVER_ONLY, type Target, type Variation } from '@flagship/flag-evaluation';

/**
 * The columns of one flag as seen in one environment (`flags f` joined with `flag_environments fe`),
 * read by management-api's export and the flag store (libs/flag-store) alike.
 */
export const FLAG_DEFINITION_COLUMNS = `f.key, f.type, f.default_value, f.variations, f.version AS flag_version, f.client_side_availability,
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
  client_side_availability: ClientSideAvailability;
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
  // Only when available somewhere: a server-only flag's definition (exports, streams) reads as before.
  const clientSide = clientSideAvailabilityOf(r.client_side_availability);
  if (clientSide !== SERVER_ONLY) def.clientSideAvailability = { ...clientSide };
  return def;
}
