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
  version: number;
  enabled: boolean | null;
  off_value: JsonValue;
  off_value_unset: boolean;
  targets: Target[] | null;
  rules: Rule[] | null;
  prerequisites: Prerequisite[] | null;
  salt: string | null;
  fingerprint: string;
}

// A flag without a row for this environment is served as off with nothing configured, which is what
// management-api shows for it there. The fingerprint reads no jsonb, so comparing 100,000 of them
// stays cheap; every writer bumps a version or updated_at (both tables default them).
const FINGERPRINT = `concat_ws(':', f.id, f.version, f.updated_at, coalesce(fe.version::text, '-'), coalesce(fe.updated_at::text, '-'))`;

const SELECT_FLAGS = `
  SELECT f.key, f.type, f.default_value, f.variations, f.version,
         fe.enabled, fe.off_value, fe.off_value IS NULL AS off_value_unset,
         fe.targets, fe.rules, fe.prerequisites, fe.salt,
         ${FINGERPRINT} AS fingerprint
    FROM flags f
    LEFT JOIN flag_environments fe
      ON fe.tenant_id = f.tenant_id AND fe.flag_id = f.id AND fe.environment_key = $2
   WHERE f.tenant_id = $1`;

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
    const rows: Array<{ key: string; fingerprint: string }> = await this.dataSource.query(
      `SELECT f.key, ${FINGERPRINT} AS fingerprint
         FROM flags f
         LEFT JOIN flag_environments fe
           ON fe.tenant_id = f.tenant_id AND fe.flag_id = f.id AND fe.environment_key = $2
        WHERE f.tenant_id = $1`,
      [tenantId, environment],
    );
    return new Map(rows.map((r) => [r.key, r.fingerprint]));
  }
}

function toStoredFlag(row: FlagRow): StoredFlag {
  const definition: FlagDefinition = {
    key: row.key,
    type: row.type,
    defaultValue: row.default_value,
    variations: row.variations,
    enabled: row.enabled === true,
    targets: row.targets ?? [],
    rules: row.rules ?? [],
    prerequisites: row.prerequisites ?? [],
    version: row.version,
  };
  // SQL NULL means "the default off value"; a stored JSON null is a real off value.
  if (!row.off_value_unset) definition.offValue = row.off_value;
  if (row.salt !== null && row.salt !== '') definition.salt = row.salt;
  return { key: row.key, fingerprint: row.fingerprint, definition };
}
