import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE, measureFlagDefinitions } from '@flagship/persistence';
import { EnvironmentEntity } from './environment.entity';

export const DEFAULT_ENVIRONMENTS = [
  { key: 'production', name: 'Production' },
  { key: 'staging', name: 'Staging' },
  { key: 'development', name: 'Development' },
] as const;

@Injectable()
export class EnvironmentsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  list(tenantId: string): Promise<EnvironmentEntity[]> {
    return this.ds.getRepository(EnvironmentEntity).find({ where: { tenantId }, order: { createdAt: 'ASC', key: 'ASC' } });
  }

  find(tenantId: string, key: string): Promise<EnvironmentEntity | null> {
    return this.ds.getRepository(EnvironmentEntity).findOneBy({ tenantId, key });
  }

  /** Sets the fields given; null when the tenant has no such environment. */
  async update(m: EntityManager, tenantId: string, key: string, changes: Partial<Pick<EnvironmentEntity, 'name' | 'requireApproval'>>): Promise<EnvironmentEntity | null> {
    const rows: Array<{ key: string }> = await m.query(
      // A SELECT around the UPDATE: TypeORM answers a bare UPDATE with [rows, count], a SELECT with rows.
      `WITH u AS (UPDATE environments SET name = COALESCE($3, name), require_approval = COALESCE($4, require_approval) WHERE tenant_id = $1 AND key = $2 RETURNING key) SELECT key FROM u`,
      [tenantId, key, changes.name ?? null, changes.requireApproval ?? null],
    );
    return rows.length === 1 ? m.getRepository(EnvironmentEntity).findOneBy({ tenantId, key }) : null;
  }

  /** The keys of the tenant's environments that require approval (read in `m` when given). */
  async approvalRequired(tenantId: string, m?: EntityManager): Promise<string[]> {
    const rows: Array<{ key: string }> = await (m ?? this.ds.manager).query(`SELECT key FROM environments WHERE tenant_id = $1 AND require_approval ORDER BY key`, [tenantId]);
    return rows.map((r) => r.key);
  }

  /** Inserts; a taken key is a unique violation (409 in the service). */
  async insert(m: EntityManager, tenantId: string, key: string, name: string): Promise<EnvironmentEntity> {
    await m.getRepository(EnvironmentEntity).insert({ tenantId, key, name });
    return (await m.getRepository(EnvironmentEntity).findOneBy({ tenantId, key }))!;
  }

  async insertDefaults(m: EntityManager, tenantId: string): Promise<void> {
    for (const e of DEFAULT_ENVIRONMENTS) {
      await m.query('INSERT INTO environments (tenant_id, key, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [tenantId, e.key, e.name]);
    }
  }

  /**
   * A new environment starts with every existing flag, switched off. Returns the bytes its copies of
   * the definitions take (stored with them, as every flag write stores its own).
   */
  async addFlagsTo(m: EntityManager, tenantId: string, key: string): Promise<number> {
    await m.query(
      `INSERT INTO flag_environments (tenant_id, flag_id, environment_key) SELECT tenant_id, id, $2 FROM flags WHERE tenant_id = $1`,
      [tenantId, key],
    );
    let bytes = 0;
    for (const d of await measureFlagDefinitions(m, tenantId, { environment: key })) bytes += d.bytes;
    return bytes;
  }
}
