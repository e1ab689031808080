import { Inject, Injectable } from '@nestjs/common';
import { isUuid } from '@flagship/domain';
import type { DataSource, EntityManager } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { ProjectEntity } from './project.entity';

export interface ProjectRow {
  project: ProjectEntity;
  flagCount: number;
}


@Injectable()
export class ProjectsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {}

  private withCount() {
    return this.ds
      .getRepository(ProjectEntity)
      .createQueryBuilder('p')
      .addSelect((sub) => sub.select('count(*)', 'n').from('flags', 'f').where('f.tenant_id = p.tenant_id AND f.project_id = p.id'), 'flag_count');
  }

  private static rows(raw: { entities: ProjectEntity[]; raw: Array<{ flag_count: string }> }): ProjectRow[] {
    return raw.entities.map((project, i) => ({ project, flagCount: Number(raw.raw[i].flag_count) }));
  }

  async list(tenantId: string, limit: number, after?: PageCursor): Promise<ProjectRow[]> {
    const q = this.withCount().where('p.tenant_id = :tenantId', { tenantId }).orderBy('p.created_at', 'ASC').addOrderBy('p.id', 'ASC').limit(limit + 1);
    if (after) q.andWhere('(p.created_at, p.id) > (:at, :id)', { at: after.at, id: after.id });
    return ProjectsRepository.rows(await q.getRawAndEntities());
  }

  async find(tenantId: string, id: string): Promise<ProjectRow | null> {
    if (!isUuid(id)) return null;
    const rows = ProjectsRepository.rows(await this.withCount().where('p.tenant_id = :tenantId AND p.id = :id', { tenantId, id }).getRawAndEntities());
    return rows[0] ?? null;
  }

  async create(tenantId: string, fields: Pick<ProjectEntity, 'name' | 'description' | 'color'>, m?: EntityManager): Promise<ProjectEntity> {
    const repo = (m ?? this.ds.manager).getRepository(ProjectEntity);
    return repo.save(repo.create({ tenantId, ...fields }));
  }

  async update(tenantId: string, id: string, changes: Partial<Pick<ProjectEntity, 'name' | 'description' | 'color'>>): Promise<void> {
    if (Object.keys(changes).length) await this.ds.getRepository(ProjectEntity).update({ tenantId, id }, changes);
  }
}
