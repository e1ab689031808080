import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { FlagDefinition, FlagType, JsonValue, Prerequisite, Rule, Target, Variation } from '@flagship/flag-evaluation';

/** One flag as stored, seen in one environment, with what tells whether it changed. */
export interface StoredFlag {
  key: string;
  /** Changes whenever the flag or its environment row is written (ids, versions, timestamps). */
  fingerprint: string;
  definition: FlagDefinition;
}

interface FlagRow {
  key: string;
  type: FlagType;
  default_value: JsonValue;
  variations: Variation[];
  flag_version: number;
  env_version: number;
  enabled: boolean;
  off_value: JsonValue;
  targets: Target[];
  rules: Rule[];
  prerequisites: Prerequisite[];
  salt: string | null;
  fingerprint: string;
}

// The same rows and shape as management-api's export (FlagsRepository.definitions there): a flag
// exists in an environment when it has a row there. The fingerprint reads no jsonb, so comparing
// 100,000 of them stays cheap; every write bumps a version and updated_at.
const FINGERPRINT = `concat_ws(':', f.id, f.version, f.updated_at, fe.version, fe.updated_at)`;

const FROM = `
    FROM flags f
    JOIN flag_environments fe ON fe.tenant_id = f.tenant_id AND fe.flag_id = f.id AND fe.environment_key = $2
   WHERE f.tenant_id = $1`;

const SELECT_FLAGS = `
  SELECT f.key, f.type, f.default_value, f.variations, f.version AS flag_version,
         fe.enabled, fe.off_value, fe.targets, fe.rules, fe.prerequisites, fe.salt, fe.version AS env_version,
         ${FINGERPRINT} AS fingerprint
  ${FROM}`;

/** Keys per query when re-reading many flags (a reconcile after a long outage). */
const KEYS_PER_QUERY = 5000;

/** The flags of one tenant and environment, read-only. Every query is scoped by tenant id. */
@Injectable()
export class FlagsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly dataSource: DataSource) {}

  async findAll(tenantId: string, environment: string): Promise<StoredFlag[]> {
    const rows: FlagRow[] = await this.dataSource.query(SELECT_FLAGS, [tenantId, environment]);
    return rows.map(toStoredFlag);
  }

  /** The named flags that exist; a key without a row was deleted. */
  async findByKeys(tenantId: string, environment: string, keys: readonly string[]): Promise<StoredFlag[]> {
    const out: StoredFlag[] = [];
    for (let i = 0; i < keys.length; i += KEYS_PER_QUERY) {
      const rows: FlagRow[] = await this.dataSource.query(`${SELECT_FLAGS} AND f.key = ANY($3::text[])`, [
        tenantId,
        environment,
        keys.slice(i, i + KEYS_PER_QUERY),
      ]);
      for (const row of rows) out.push(toStoredFlag(row));
    }
    return out;
  }

  /** key -> fingerprint of every flag of the tenant, to find what a missed message left stale. */
  async fingerprints(tenantId: string, environment: string): Promise<Map<string, string>> {
    const rows: Array<{ key: string; fingerprint: string }> = await this.dataSource.query(`SELECT f.key, ${FINGERPRINT} AS fingerprint ${FROM}`, [
      tenantId,
      environment,
    ]);
    return new Map(rows.map((r) => [r.key, r.fingerprint]));
  }
}

/** Exactly as management-api maps the row (rowToDefinition there), so both modes see one flag alike. */
function toStoredFlag(row: FlagRow): StoredFlag {
  const definition: FlagDefinition = {
    key: row.key,
    type: row.type,
    defaultValue: row.default_value,
    variations: row.variations,
    enabled: row.enabled,
    targets: row.targets,
    rules: row.rules,
    prerequisites: row.prerequisites,
    // One number that grows with either version (management-api's ETag and export use the same).
    version: row.flag_version * 100000 + row.env_version,
  };
  if (row.off_value !== null && row.off_value !== undefined) definition.offValue = row.off_value;
  if (typeof row.salt === 'string') definition.salt = row.salt;
  return { key: row.key, fingerprint: row.fingerprint, definition };
}
