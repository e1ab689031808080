import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { type FlagDefinition, SERVER_ONLY } from '@flagship/flag-evaluation';
import { DATA_SOURCE, FLAG_DEFINITION_COLUMNS, type FlagDefinitionRow, flagDefinitionFromRow, type MeasuredDefinition, measureFlagDefinitions } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import type { LifecycleFilter } from './flag-lifecycle';
import { FlagAuditEntity, FlagEntity, FlagEnvironmentEntity } from './flag.entity';

/** A flag's global fields a write may change, as the flag row holds them. */
export type FlagGlobalFields = Pick<FlagEntity, 'name' | 'description' | 'defaultValue' | 'tags' | 'projectId' | 'variations' | 'clientSideAvailability'>;
/** A flag's fields in one environment a write may change (its targeting). */
export type FlagTargetingFields = Pick<FlagEnvironmentEntity, 'enabled' | 'offValue' | 'targets' | 'rules' | 'prerequisites' | 'salt'>;

/** Updatable fields -> [column, is jsonb]. */
const FLAG_COLUMNS: Record<keyof FlagGlobalFields, [string, boolean]> = {
  name: ['name', false],
  description: ['description', false],
  defaultValue: ['default_value', true],
  tags: ['tags', false],
  projectId: ['project_id', false],
  variations: ['variations', true],
  clientSideAvailability: ['client_side_availability', true],
};
const ENV_COLUMNS: Record<keyof FlagTargetingFields, [string, boolean]> = {
  enabled: ['enabled', false],
  offValue: ['off_value', true],
  targets: ['targets', true],
  rules: ['rules', true],
  prerequisites: ['prerequisites', true],
  salt: ['salt', false],
};

/** A flag as seen in one environment: its global row and that environment's row. */
export interface FlagRow {
  flag: FlagEntity;
  env: FlagEnvironmentEntity;
  /** When an evaluator last evaluated it in this environment (flag_evaluations); null: never; absent: not read (rows locked for a write). */
  lastEvaluatedAt?: Date | null;
}

/** What a new flag is made of (its row in every environment starts switched off, untargeted). */
export type NewFlagFields = Omit<FlagEntity, 'id' | 'tenantId' | 'version' | 'createdAt' | 'updatedAt' | 'clientSideAvailability'> & Partial<Pick<FlagEntity, 'clientSideAvailability'>>;
/** What an import writes of a new flag (no project, named by its key). */
export type ImportedFlagFields = Pick<FlagEntity, 'key' | 'type' | 'defaultValue' | 'variations' | 'clientSideAvailability'>;
/** A write at an expected version: applied only while the row is still at it, bumping it. */
export interface AtVersion {
  flagId: string;
  expectedVersion: number;
}
export type AuditRecord = Pick<FlagAuditEntity, 'flagKey' | 'environmentKey' | 'action' | 'actor' | 'changes'>;

/**
 * Flags of one tenant (the port: SqlFlagsRepository over Postgres, FakeFlagsRepository in memory).
 * Every method takes the tenant id first and names it in every statement; another tenant's flag
 * reads as missing. Methods taking a transaction write in it, or read what it has written.
 */
export abstract class FlagsRepository {
  abstract findByKey(tenantId: string, key: string, m?: EntityManager): Promise<FlagEntity | null>;
  abstract findRow(tenantId: string, key: string, environment: string, m?: EntityManager): Promise<FlagRow | null>;
  /** The row, locked for update until the transaction ends, so concurrent writers queue. */
  abstract lockRow(m: EntityManager, tenantId: string, key: string, environment: string): Promise<FlagRow | null>;
  /**
   * Takes the tenant's import lock until the transaction ends, without waiting: false when another
   * import of the tenant holds it. Other tenants' imports take other keys.
   */
  abstract tryLockImport(m: EntityManager, tenantId: string): Promise<boolean>;
  /** The flags of these keys that have a row in `environment`, locked for update in key order (so concurrent writers queue instead of deadlocking). */
  abstract lockRows(m: EntityManager, tenantId: string, keys: readonly string[], environment: string): Promise<Map<string, FlagRow>>;
  /** Every environment row of these flags. */
  abstract envRowsOfMany(m: EntityManager, tenantId: string, flagIds: readonly string[]): Promise<FlagEnvironmentEntity[]>;
  /** The rows of these keys in `environment`, in the order of `keys` (missing ones left out). */
  abstract findRows(tenantId: string, keys: readonly string[], environment: string): Promise<FlagRow[]>;
  /** flag id -> the environments it has a row in (sorted). */
  abstract environmentsOfMany(tenantId: string, flagIds: readonly string[]): Promise<Map<string, string[]>>;
  /** Inserts new flags and their row, switched off, in every environment of the tenant. Returns key -> id. */
  abstract insertMany(m: EntityManager, tenantId: string, flags: readonly ImportedFlagFields[]): Promise<Map<string, string>>;
  /** Sets what an import writes of many flags' global fields, each only at its expected version. Returns how many applied. */
  abstract updateImportedMany(m: EntityManager, tenantId: string, rows: ReadonlyArray<AtVersion & Pick<FlagEntity, 'variations' | 'clientSideAvailability'>>): Promise<number>;
  /** Replaces the targeting of many flags in one environment, each only at its expected version. Returns how many applied. */
  abstract replaceTargetingMany(m: EntityManager, tenantId: string, environment: string, rows: ReadonlyArray<AtVersion & FlagTargetingFields>): Promise<number>;
  abstract envRows(m: EntityManager, tenantId: string, flagId: string): Promise<FlagEnvironmentEntity[]>;
  /** A page of flags as seen in `environment`, oldest first (one more than `limit`, to tell a next page), only those of `lifecycle` when given (flag-lifecycle's isStale). */
  abstract list(tenantId: string, environment: string, limit: number, after?: PageCursor, projectId?: string, lifecycle?: LifecycleFilter): Promise<FlagRow[]>;
  /** Inserts the flag and its row in every environment of the tenant (switched on only in `enabledIn`); a key taken is a unique violation. */
  abstract insert(m: EntityManager, tenantId: string, fields: NewFlagFields, enabledIn?: string): Promise<FlagEntity>;
  /** Sets the global fields given, bumping the version; only at `expectedVersion`. Returns whether it applied. */
  abstract updateFlag(m: EntityManager, tenantId: string, flagId: string, expectedVersion: number, changes: Partial<FlagGlobalFields>): Promise<boolean>;
  abstract updateEnv(m: EntityManager, tenantId: string, flagId: string, environment: string, expectedVersion: number, changes: Partial<FlagTargetingFields>): Promise<boolean>;
  /** Stores the size of these flags' definitions in every environment as this transaction left them; returns each, before and now (by key, then environment). */
  abstract measure(m: EntityManager, tenantId: string, flagIds: readonly string[]): Promise<MeasuredDefinition[]>;
  /** Deletes the flag and its rows in every environment (its audit trail stays). */
  abstract delete(m: EntityManager, tenantId: string, flagId: string): Promise<void>;
  /** Keys of flags naming `key` as a prerequisite in any environment, sorted. */
  abstract dependents(tenantId: string, key: string, m?: EntityManager): Promise<string[]>;
  /** The environments the flag has a row in, sorted. */
  abstract environmentsOf(tenantId: string, flagId: string, m?: EntityManager): Promise<string[]>;
  abstract audit(m: EntityManager, row: AuditRecord & Pick<FlagAuditEntity, 'tenantId'>): Promise<void>;
  /** Audit records of one tenant, their ids in the order given. */
  abstract auditMany(m: EntityManager, tenantId: string, rows: readonly AuditRecord[]): Promise<void>;
  /** A flag's audit records, oldest first. */
  abstract auditTrail(tenantId: string, flagKey: string): Promise<FlagAuditEntity[]>;
  /** Every flag of the tenant as seen in one environment, in the evaluator's shape, by key. */
  abstract definitions(tenantId: string, environment: string, m?: EntityManager): Promise<FlagDefinition[]>;
}

/** FlagsRepository over Postgres (TypeORM). */
@Injectable()
export class SqlFlagsRepository extends FlagsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  private flags(m?: EntityManager) {
    return (m ?? this.ds.manager).getRepository(FlagEntity);
  }

  private envs(m?: EntityManager) {
    return (m ?? this.ds.manager).getRepository(FlagEnvironmentEntity);
  }

  // Query builders and SQL rather than findOneBy/insert objects: TypeORM's deep-partial types
  // do not terminate on the recursive JSON column types.
  findByKey(tenantId: string, key: string, m?: EntityManager): Promise<FlagEntity | null> {
    return this.flags(m).createQueryBuilder('f').where('f.tenant_id = :tenantId AND f.key = :key', { tenantId, key }).getOne();
  }

  private envRow(tenantId: string, flagId: string, environment: string, m?: EntityManager): Promise<FlagEnvironmentEntity | null> {
    return this.envs(m)
      .createQueryBuilder('e')
      .where('e.tenant_id = :tenantId AND e.flag_id = :flagId AND e.environment_key = :environment', { tenantId, flagId, environment })
      .getOne();
  }

  async findRow(tenantId: string, key: string, environment: string, m?: EntityManager): Promise<FlagRow | null> {
    const flag = await this.findByKey(tenantId, key, m);
    if (!flag) return null;
    const env = await this.envRow(tenantId, flag.id, environment, m);
    if (!env) return null;
    const evaluated = await this.lastEvaluated(tenantId, environment, [key], m);
    return { flag, env, lastEvaluatedAt: evaluated.get(key) ?? null };
  }

  /** flag key -> when it was last evaluated in `environment` (keys never evaluated left out). */
  private async lastEvaluated(tenantId: string, environment: string, keys: readonly string[], m?: EntityManager): Promise<Map<string, Date>> {
    if (keys.length === 0) return new Map();
    const rows: Array<{ flag_key: string; last_evaluated_at: Date }> = await (m ?? this.ds.manager).query(
      'SELECT flag_key, last_evaluated_at FROM flag_evaluations WHERE tenant_id = $1 AND environment_key = $2 AND flag_key = ANY($3::text[])',
      [tenantId, environment, keys],
    );
    return new Map(rows.map((r) => [r.flag_key, r.last_evaluated_at]));
  }

  async lockRow(m: EntityManager, tenantId: string, key: string, environment: string): Promise<FlagRow | null> {
    const flag = await this.flags(m).createQueryBuilder('f').setLock('pessimistic_write').where('f.tenant_id = :tenantId AND f.key = :key', { tenantId, key }).getOne();
    if (!flag) return null;
    const env = await this.envRow(tenantId, flag.id, environment, m);
    return env ? { flag, env } : null;
  }

  async tryLockImport(m: EntityManager, tenantId: string): Promise<boolean> {
    const [row] = (await m.query(`SELECT pg_try_advisory_xact_lock(hashtextextended('flag-import:' || $1::text, 0)) AS locked`, [tenantId])) as Array<{ locked: boolean }>;
    return row?.locked === true;
  }

  /** Two statements whatever the number of keys. */
  async lockRows(m: EntityManager, tenantId: string, keys: readonly string[], environment: string): Promise<Map<string, FlagRow>> {
    const out = new Map<string, FlagRow>();
    if (keys.length === 0) return out;
    const flags = await this.flags(m)
      .createQueryBuilder('f')
      .setLock('pessimistic_write')
      .where('f.tenant_id = :tenantId AND f.key = ANY(:keys)', { tenantId, keys })
      .orderBy('f.key', 'ASC')
      .getMany();
    if (flags.length === 0) return out;
    const envs = await this.envs(m)
      .createQueryBuilder('e')
      .where('e.tenant_id = :tenantId AND e.flag_id = ANY(:ids) AND e.environment_key = :environment', { tenantId, ids: flags.map((f) => f.id), environment })
      .getMany();
    const envOf = new Map(envs.map((e) => [e.flagId, e]));
    for (const flag of flags) {
      const env = envOf.get(flag.id);
      if (env) out.set(flag.key, { flag, env });
    }
    return out;
  }

  /** One statement. */
  async envRowsOfMany(m: EntityManager, tenantId: string, flagIds: readonly string[]): Promise<FlagEnvironmentEntity[]> {
    if (flagIds.length === 0) return [];
    return this.envs(m).createQueryBuilder('e').where('e.tenant_id = :tenantId AND e.flag_id = ANY(:flagIds)', { tenantId, flagIds }).getMany();
  }

  async findRows(tenantId: string, keys: readonly string[], environment: string): Promise<FlagRow[]> {
    if (keys.length === 0) return [];
    const flags = await this.flags().createQueryBuilder('f').where('f.tenant_id = :tenantId AND f.key = ANY(:keys)', { tenantId, keys }).getMany();
    const envs = await this.envs()
      .createQueryBuilder('e')
      .where('e.tenant_id = :tenantId AND e.flag_id = ANY(:ids) AND e.environment_key = :environment', { tenantId, ids: flags.map((f) => f.id), environment })
      .getMany();
    const envOf = new Map(envs.map((e) => [e.flagId, e]));
    const byKey = new Map(flags.map((f) => [f.key, f]));
    const evaluated = await this.lastEvaluated(tenantId, environment, keys);
    const out: FlagRow[] = [];
    for (const key of keys) {
      const flag = byKey.get(key);
      const env = flag && envOf.get(flag.id);
      if (flag && env) out.push({ flag, env, lastEvaluatedAt: evaluated.get(key) ?? null });
    }
    return out;
  }

  /** One statement for many flags. */
  async environmentsOfMany(tenantId: string, flagIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (flagIds.length === 0) return out;
    const rows: Array<{ flag_id: string; environment_key: string }> = await this.ds.manager.query(
      'SELECT flag_id, environment_key FROM flag_environments WHERE tenant_id = $1 AND flag_id = ANY($2::uuid[]) ORDER BY environment_key',
      [tenantId, flagIds],
    );
    for (const r of rows) {
      const list = out.get(r.flag_id);
      if (list) list.push(r.environment_key);
      else out.set(r.flag_id, [r.environment_key]);
    }
    return out;
  }

  /** Two statements for any number of flags. */
  async insertMany(m: EntityManager, tenantId: string, flags: readonly ImportedFlagFields[]): Promise<Map<string, string>> {
    if (flags.length === 0) return new Map();
    const rows: Array<{ id: string; key: string }> = await m.query(
      `INSERT INTO flags (tenant_id, key, project_id, name, type, default_value, description, tags, variations, client_side_availability)
       SELECT $1, x.key, NULL, x.key, x.type, x.default_value, '', '{}', x.variations, x.client_side_availability
         FROM jsonb_to_recordset($2::jsonb) AS x(key text, type text, default_value jsonb, variations jsonb, client_side_availability jsonb)
       RETURNING id, key`,
      [
        tenantId,
        JSON.stringify(flags.map((f) => ({ key: f.key, type: f.type, default_value: f.defaultValue, variations: f.variations, client_side_availability: f.clientSideAvailability }))),
      ],
    );
    const ids = new Map(rows.map((r) => [r.key, r.id]));
    await m.query(
      `INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled)
       SELECT $1, f.id, e.key, false FROM unnest($2::uuid[]) AS f(id) CROSS JOIN environments e WHERE e.tenant_id = $1`,
      [tenantId, [...ids.values()]],
    );
    return ids;
  }

  /** One statement. */
  async updateImportedMany(m: EntityManager, tenantId: string, rows: ReadonlyArray<AtVersion & Pick<FlagEntity, 'variations' | 'clientSideAvailability'>>): Promise<number> {
    if (rows.length === 0) return 0;
    const [, affected] = (await m.query(
      `UPDATE flags f SET variations = x.variations, client_side_availability = x.client_side_availability, version = f.version + 1, updated_at = now()
         FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, version integer, variations jsonb, client_side_availability jsonb)
        WHERE f.tenant_id = $1 AND f.id = x.id AND f.version = x.version`,
      [tenantId, JSON.stringify(rows.map((r) => ({ id: r.flagId, version: r.expectedVersion, variations: r.variations, client_side_availability: r.clientSideAvailability })))],
    )) as [unknown, number];
    return affected;
  }

  /** One statement. A JSON null off value is stored as SQL NULL (the type's default). */
  async replaceTargetingMany(m: EntityManager, tenantId: string, environment: string, rows: ReadonlyArray<AtVersion & FlagTargetingFields>): Promise<number> {
    if (rows.length === 0) return 0;
    const [, affected] = (await m.query(
      `UPDATE flag_environments fe
          SET enabled = x.enabled, off_value = x.off_value, targets = x.targets, rules = x.rules, prerequisites = x.prerequisites, salt = x.salt,
              version = fe.version + 1, updated_at = now()
         FROM jsonb_to_recordset($3::jsonb) AS x(flag_id uuid, version integer, enabled boolean, off_value jsonb, targets jsonb, rules jsonb, prerequisites jsonb, salt text)
        WHERE fe.tenant_id = $1 AND fe.environment_key = $2 AND fe.flag_id = x.flag_id AND fe.version = x.version`,
      [
        tenantId,
        environment,
        JSON.stringify(
          rows.map((r) => ({
            flag_id: r.flagId,
            version: r.expectedVersion,
            enabled: r.enabled,
            off_value: r.offValue,
            targets: r.targets,
            rules: r.rules,
            prerequisites: r.prerequisites,
            salt: r.salt,
          })),
        ),
      ],
    )) as [unknown, number];
    return affected;
  }

  async envRows(m: EntityManager, tenantId: string, flagId: string): Promise<FlagEnvironmentEntity[]> {
    return this.envs(m).createQueryBuilder('e').where('e.tenant_id = :tenantId AND e.flag_id = :flagId', { tenantId, flagId }).getMany();
  }

  /** One statement; the lifecycle filter is flag-lifecycle's isStale in SQL (the key order and cursor stay as they are, so pages stay correct). */
  async list(tenantId: string, environment: string, limit: number, after?: PageCursor, projectId?: string, lifecycle?: LifecycleFilter): Promise<FlagRow[]> {
    const q = this.flags()
      .createQueryBuilder('f')
      .innerJoinAndMapOne('f.env', FlagEnvironmentEntity, 'e', 'e.flag_id = f.id AND e.tenant_id = f.tenant_id AND e.environment_key = :environment', { environment })
      .leftJoin('flag_evaluations', 'ev', 'ev.tenant_id = f.tenant_id AND ev.environment_key = e.environment_key AND ev.flag_key = f.key')
      .addSelect('ev.last_evaluated_at', 'last_evaluated_at')
      .where('f.tenant_id = :tenantId', { tenantId })
      .orderBy('f.created_at', 'ASC')
      .addOrderBy('f.id', 'ASC')
      .limit(limit + 1);
    if (projectId) q.andWhere('f.project_id = :projectId', { projectId });
    if (after) q.andWhere('(f.created_at, f.id) > (:at, :id)', { at: after.at, id: after.id });
    if (lifecycle) {
      const stale = `(COALESCE(ev.last_evaluated_at, f.created_at) < :cutoff OR COALESCE(e.serving_one_variation_since, 'infinity') < :cutoff)`;
      q.andWhere(lifecycle.lifecycle === 'stale' ? stale : `NOT ${stale}`, { cutoff: lifecycle.cutoff });
    }
    const { entities, raw } = await q.getRawAndEntities<{ f_id: string; last_evaluated_at: Date | null }>();
    const evaluated = new Map(raw.map((r) => [r.f_id, r.last_evaluated_at]));
    return entities.map((flag) => ({ flag, env: (flag as FlagEntity & { env: FlagEnvironmentEntity }).env, lastEvaluatedAt: evaluated.get(flag.id) ?? null }));
  }

  async insert(m: EntityManager, tenantId: string, fields: NewFlagFields, enabledIn?: string): Promise<FlagEntity> {
    await m.query(
      `INSERT INTO flags (tenant_id, key, project_id, name, type, default_value, description, tags, variations, client_side_availability)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9::jsonb, $10::jsonb)`,
      [
        tenantId,
        fields.key,
        fields.projectId,
        fields.name,
        fields.type,
        JSON.stringify(fields.defaultValue),
        fields.description,
        fields.tags,
        JSON.stringify(fields.variations),
        JSON.stringify(fields.clientSideAvailability ?? SERVER_ONLY),
      ],
    );
    const flag = (await this.findByKey(tenantId, fields.key, m))!;
    await m.query(
      `INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled)
       SELECT $1, $2, key, key IS NOT DISTINCT FROM $3::text AND $3::text IS NOT NULL FROM environments WHERE tenant_id = $1`,
      [tenantId, flag.id, enabledIn ?? null],
    );
    return flag;
  }

  async updateFlag(m: EntityManager, tenantId: string, flagId: string, expectedVersion: number, changes: Partial<FlagGlobalFields>): Promise<boolean> {
    return this.update(m, 'flags', FLAG_COLUMNS, changes, 'tenant_id = $1 AND id = $2 AND version = $3', [tenantId, flagId, expectedVersion]);
  }

  async updateEnv(m: EntityManager, tenantId: string, flagId: string, environment: string, expectedVersion: number, changes: Partial<FlagTargetingFields>): Promise<boolean> {
    return this.update(m, 'flag_environments', ENV_COLUMNS, changes, 'tenant_id = $1 AND flag_id = $2 AND environment_key = $3 AND version = $4', [
      tenantId,
      flagId,
      environment,
      expectedVersion,
    ]);
  }

  private async update(m: EntityManager, table: string, columns: Record<string, [string, boolean]>, changes: object, where: string, params: unknown[]): Promise<boolean> {
    const sets: string[] = [];
    const values = [...params];
    for (const [field, value] of Object.entries(changes)) {
      const col = columns[field];
      if (!col) throw new Error(`not an updatable field: ${field}`);
      values.push(col[1] ? (value === null ? null : JSON.stringify(value)) : value);
      sets.push(`${col[0]} = $${values.length}${col[1] ? '::jsonb' : ''}`);
    }
    const [, affected] = (await m.query(`UPDATE ${table} SET ${[...sets, 'version = version + 1', 'updated_at = now()'].join(', ')} WHERE ${where}`, values)) as [unknown, number];
    return affected === 1;
  }

  measure(m: EntityManager, tenantId: string, flagIds: readonly string[]): Promise<MeasuredDefinition[]> {
    return measureFlagDefinitions(m, tenantId, { flagIds });
  }

  async delete(m: EntityManager, tenantId: string, flagId: string): Promise<void> {
    // Its evaluations are kept by key (evaluators know no ids): a flag made again under the key starts afresh.
    await m.query('DELETE FROM flag_evaluations WHERE tenant_id = $1 AND flag_key = (SELECT key FROM flags WHERE tenant_id = $1 AND id = $2)', [tenantId, flagId]);
    await m.query('DELETE FROM flags WHERE tenant_id = $1 AND id = $2', [tenantId, flagId]);
  }

  async dependents(tenantId: string, key: string, m?: EntityManager): Promise<string[]> {
    const rows: Array<{ key: string }> = await (m ?? this.ds.manager).query(
      `SELECT DISTINCT f.key FROM flag_environments e JOIN flags f ON f.id = e.flag_id
       WHERE e.tenant_id = $1 AND e.prerequisites @> $2::jsonb AND f.key <> $3 ORDER BY f.key`,
      [tenantId, JSON.stringify([{ key }]), key],
    );
    return rows.map((r) => r.key);
  }

  async environmentsOf(tenantId: string, flagId: string, m?: EntityManager): Promise<string[]> {
    const rows: Array<{ environment_key: string }> = await (m ?? this.ds.manager).query(
      'SELECT environment_key FROM flag_environments WHERE tenant_id = $1 AND flag_id = $2 ORDER BY environment_key',
      [tenantId, flagId],
    );
    return rows.map((r) => r.environment_key);
  }

  async audit(m: EntityManager, row: AuditRecord & Pick<FlagAuditEntity, 'tenantId'>): Promise<void> {
    await m.query(`INSERT INTO flag_audit (tenant_id, flag_key, environment_key, action, actor, changes) VALUES ($1, $2, $3, $4, $5, $6::jsonb)`, [
      row.tenantId,
      row.flagKey,
      row.environmentKey,
      row.action,
      row.actor,
      JSON.stringify(row.changes),
    ]);
  }

  /** One statement. */
  async auditMany(m: EntityManager, tenantId: string, rows: readonly AuditRecord[]): Promise<void> {
    if (rows.length === 0) return;
    await m.query(
      `INSERT INTO flag_audit (tenant_id, flag_key, environment_key, action, actor, changes)
       SELECT $1, x.doc->>'flagKey', x.doc->>'environmentKey', x.doc->>'action', x.doc->>'actor', x.doc->'changes'
         FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(doc, ord)
        ORDER BY x.ord`,
      [tenantId, JSON.stringify(rows)],
    );
  }

  auditTrail(tenantId: string, flagKey: string): Promise<FlagAuditEntity[]> {
    return this.ds
      .getRepository(FlagAuditEntity)
      .createQueryBuilder('a')
      .where('a.tenant_id = :tenantId AND a.flag_key = :flagKey', { tenantId, flagKey })
      .orderBy('a.id', 'ASC')
      .getMany();
  }

  async definitions(tenantId: string, environment: string, m?: EntityManager): Promise<FlagDefinition[]> {
    const rows: FlagDefinitionRow[] = await (m ?? this.ds.manager).query(
      `SELECT ${FLAG_DEFINITION_COLUMNS}
       FROM flags f JOIN flag_environments fe ON fe.flag_id = f.id AND fe.tenant_id = f.tenant_id
       WHERE f.tenant_id = $1 AND fe.environment_key = $2
       ORDER BY f.key`,
      [tenantId, environment],
    );
    return rows.map(flagDefinitionFromRow);
  }
}
