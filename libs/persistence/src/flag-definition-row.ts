import { createHash } from 'node:crypto';
import { servesOneValue, type ClientSideAvailability, clientSideAvailabilityOf, type FlagDefinition, flagDefinitionBytes, type FlagType, type JsonValue, type Prerequisite, type Rule, SERVER_ONLY, type Target, type Variation } from '@flagship/flag-evaluation';

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

/**
 * Names the one value the definition serves to everyone (servesOneValue), or null when it serves
 * several: a digest, so that a flag moving from one value to another starts a new "since".
 */
export function servedValueDigest(def: FlagDefinition): string | null {
  const one = servesOneValue(def);
  return one === undefined ? null : createHash('sha256').update(canonicalJson(one.value)).digest('base64url').slice(0, 22);
}

/** JSON with object keys sorted: jsonb reorders keys, and the same value must digest the same. */
function canonicalJson(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k] as JsonValue)}`).join(',')}}`;
  return JSON.stringify(v);
}

/** One flag's definition in one environment, measured (flagDefinitionBytes) after a write. */
export interface MeasuredDefinition {
  flagId: string;
  key: string;
  environment: string;
  /** What was stored for it before (0 for a row just inserted). */
  before: number;
  bytes: number;
}


/** What measureFlagDefinitions runs its statements with (an EntityManager, a QueryRunner, a pg client). */
export interface DefinitionSizeRunner {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * Stores `definition_bytes` of the rows a write changed, read back as evaluators will read them
 * (FLAG_DEFINITION_COLUMNS, flagDefinitionFromRow) and measured by flagDefinitionBytes, so the byte
 * quota counts with one SUM what the flag store holds. Run inside the write's transaction, after
 * it: these flags in every environment, or every flag of one environment (a new environment).
 */
export async function measureFlagDefinitions(
  m: DefinitionSizeRunner,
  tenantId: string,
  scope: { flagIds: readonly string[] } | { environment: string },
): Promise<MeasuredDefinition[]> {
  const byFlags = 'flagIds' in scope;
  if (byFlags && scope.flagIds.length === 0) return [];
  const rows = (await m.query(
    `SELECT f.id AS flag_id, fe.environment_key, fe.definition_bytes AS before, fe.serving_digest, ${FLAG_DEFINITION_COLUMNS}
       FROM flags f JOIN flag_environments fe ON fe.tenant_id = f.tenant_id AND fe.flag_id = f.id
      WHERE f.tenant_id = $1 AND ${byFlags ? 'f.id = ANY($2::uuid[])' : 'fe.environment_key = $2'}
      ORDER BY f.key, fe.environment_key`,
    [tenantId, byFlags ? scope.flagIds : scope.environment],
  )) as Array<FlagDefinitionRow & { flag_id: string; environment_key: string; before: number; serving_digest: string | null }>;
  const measured = rows.map((r) => {
    const def = flagDefinitionFromRow(r);
    return { flagId: r.flag_id, key: r.key, environment: r.environment_key, before: r.before, bytes: flagDefinitionBytes(def), digest: servedValueDigest(def), digestBefore: r.serving_digest };
  });
  const changed = measured.filter((d) => d.bytes !== d.before || d.digest !== d.digestBefore);
  if (changed.length > 0) {
    // serving_one_variation_since: kept while the same one value is served, now() when it starts, NULL when several are.
    await m.query(
      `UPDATE flag_environments fe SET definition_bytes = x.bytes, serving_digest = x.digest,
              serving_one_variation_since = CASE WHEN x.digest IS NULL THEN NULL
                                                 WHEN fe.serving_digest IS NOT DISTINCT FROM x.digest THEN fe.serving_one_variation_since
                                                 ELSE now() END
         FROM unnest($2::uuid[], $3::text[], $4::int[], $5::text[]) AS x(flag_id, environment_key, bytes, digest)
        WHERE fe.tenant_id = $1 AND fe.flag_id = x.flag_id AND fe.environment_key = x.environment_key`,
      [tenantId, changed.map((d) => d.flagId), changed.map((d) => d.environment), changed.map((d) => d.bytes), changed.map((d) => d.digest)],
    );
  }
  return measured.map(({ digest: _d, digestBefore: _b, ...size }) => size);
}
