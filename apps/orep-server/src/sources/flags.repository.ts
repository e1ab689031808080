import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE, FLAG_DEFINITION_COLUMNS, FLAG_FINGERPRINT, type FlagDefinitionRow, flagDefinitionFromRow } from '@flagship/persistence';
import type { FlagDefinition } from '@flagship/flag-evaluation';

/** One flag as stored, seen in one environment, with what tells whether it changed. */
export interface StoredFlag {
  key: string;
  /** Changes whenever the flag or its environment row is written (ids, versions, timestamps). */
  fingerprint: string;
  definition: FlagDefinition;
}

interface FlagRow extends FlagDefinitionRow {
  fingerprint: string;
}

// The same rows and columns as management-api's export (FLAG_DEFINITION_COLUMNS): a flag
// exists in an environment when it has a row there. The fingerprint reads no jsonb, so comparing
// 100,000 of them stays cheap.
const FINGERPRINT = FLAG_FINGERPRINT;

const FROM = `
    FROM flags f
    JOIN flag_environments fe ON fe.tenant_id = f.tenant_id AND fe.flag_id = f.id AND fe.environment_key = $2
   WHERE f.tenant_id = $1`;

const SELECT_FLAGS = `
  SELECT ${FLAG_DEFINITION_COLUMNS},
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

/** The shared mapping (libs/persistence), so both apps see one flag alike. */
function toStoredFlag(row: FlagRow): StoredFlag {
  return { key: row.key, fingerprint: row.fingerprint, definition: flagDefinitionFromRow(row) };
}
