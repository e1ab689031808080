import { Body, Controller, Get, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { PageQueryDto, pageLimit, sendPage } from '@flagship/service-kit';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { CreateProjectDto, ProjectDto, UpdateProjectDto } from './projects.dto';
import { ProjectsService, toProjectDto } from './projects.service';

@ApiTags('projects')
@ApiBearerAuth('bearer')
@ApiHeader({ name: 'X-Tenant-ID', required: false })
@Controller('api/projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  @Get()
  @TenantAccess({ role: 'viewer', scopes: ['projects:read'], headerRequired: true })
  @ApiOkResponse({ type: [ProjectDto] })
  async list(@CurrentTenant() tenant: TenantEntity, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response) {
    const limit = pageLimit(page);
    const rows = await this.projects.list(tenant.id, limit, page.cursor);
    return sendPage(req, res, rows, limit, (r) => ({ at: r.project.createdAt.toISOString(), id: r.project.id })).map(toProjectDto);
  }

  @Post()
  @TenantAccess({ role: 'editor', scopes: ['projects:write'] })
  @ApiCreatedResponse({ type: ProjectDto })
  create(@CurrentTenant() tenant: TenantEntity, @Body() dto: CreateProjectDto) {
    return this.projects.create(tenant.id, dto);
  }

  @Get(':id')
  @TenantAccess({ role: 'viewer', scopes: ['projects:read'] })
  @ApiOkResponse({ type: ProjectDto })
  get(@CurrentTenant() tenant: TenantEntity, @Param('id') id: string) {
    return this.projects.get(tenant.id, id);
  }

  @Patch(':id')
  @TenantAccess({ role: 'editor', scopes: ['projects:write'] })
  @ApiOkResponse({ type: ProjectDto })
  update(@CurrentTenant() tenant: TenantEntity, @Param('id') id: string, @Body() dto: UpdateProjectDto) {
    return this.projects.update(tenant.id, id, dto);
  }
}
