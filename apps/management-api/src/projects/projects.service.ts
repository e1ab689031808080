import { Injectable } from '@nestjs/common';
import type { Project } from '@flagship/domain';
import { ProblemException } from '@flagship/problem-details';
import { decodeCursor } from '@flagship/service-kit';
import type { CreateProjectDto, UpdateProjectDto } from './projects.dto';
import { ProjectProblems } from './projects.errors';
import { type ProjectRow, ProjectsRepository } from './projects.repository';

export const toProjectDto = (r: ProjectRow): Project => ({
  id: r.project.id,
  name: r.project.name,
  description: r.project.description,
  color: r.project.color,
  flagCount: r.flagCount,
  createdAt: r.project.createdAt.toISOString(),
  updatedAt: r.project.updatedAt.toISOString(),
});

@Injectable()
export class ProjectsService {
  constructor(private readonly repo: ProjectsRepository) {}

  list(tenantId: string, limit: number, cursor?: string): Promise<ProjectRow[]> {
    return this.repo.list(tenantId, limit, decodeCursor(cursor));
  }

  async get(tenantId: string, id: string): Promise<Project> {
    return toProjectDto(await this.found(tenantId, id));
  }

  async create(tenantId: string, dto: CreateProjectDto): Promise<Project> {
    const p = await this.repo.create(tenantId, { name: dto.name, description: dto.description ?? '', color: dto.color ?? '#6366f1' });
    return toProjectDto({ project: p, flagCount: 0 });
  }

  async update(tenantId: string, id: string, dto: UpdateProjectDto): Promise<Project> {
    await this.found(tenantId, id);
    await this.repo.update(tenantId, id, dto);
    return this.get(tenantId, id);
  }

  async exists(tenantId: string, id: string): Promise<boolean> {
    return (await this.repo.find(tenantId, id)) !== null;
  }

  /** The project of this tenant, or 404 (also for another tenant's project: its existence is not told). */
  async found(tenantId: string, id: string): Promise<ProjectRow> {
    const row = await this.repo.find(tenantId, id);
    if (!row) throw new ProblemException(ProjectProblems['project-not-found'], `No project ${id} in this tenant.`);
    return row;
  }
}
