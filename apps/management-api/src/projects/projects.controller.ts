import { Body, Controller, Get, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS } from '@flagship/problem-details';
import type { Request, Response } from 'express';
import type { TenantEntity } from '@flagship/persistence';
import { PageQueryDto, pageLimit, sendPage } from '@flagship/service-kit';
import { CurrentTenant, TenantAccess } from '../auth/auth.decorators';
import { CreateProjectDto, ProjectDto, UpdateProjectDto } from './projects.dto';
import { ProjectsService, toProjectDto } from './projects.service';

@ApiTags('projects')
@ApiBearerAuth('bearer')
@ApiErrors(401, 403, 404, 429, 503)
@ApiHeader({ name: 'X-Tenant-ID', required: false })
@Controller('api/projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  @Get()
  @TenantAccess({ role: 'viewer', scopes: ['projects:read'], headerRequired: true })
  @ApiOperation({ summary: 'List projects (paginated)' })
  @ApiErrors(400, 422)
  @ApiOkResponse({ type: [ProjectDto] })
  async list(@CurrentTenant() tenant: TenantEntity, @Query() page: PageQueryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response) {
    const limit = pageLimit(page);
    const rows = await this.projects.list(tenant.id, limit, page.cursor);
    return sendPage(req, res, rows, limit, (r) => ({ at: r.project.createdAt.toISOString(), id: r.project.id })).map(toProjectDto);
  }

  @Post()
  @TenantAccess({ role: 'editor', scopes: ['projects:write'] })
  @ApiOperation({ summary: 'Create a project' })
  @ApiErrors(...BODY_ERRORS)
  @ApiCreatedResponse({ type: ProjectDto })
  create(@CurrentTenant() tenant: TenantEntity, @Body() dto: CreateProjectDto) {
    return this.projects.create(tenant.id, dto);
  }

  @Get(':id')
  @TenantAccess({ role: 'viewer', scopes: ['projects:read'] })
  @ApiOperation({ summary: 'Get a project' })
  @ApiErrors(400)
  @ApiOkResponse({ type: ProjectDto })
  get(@CurrentTenant() tenant: TenantEntity, @Param('id') id: string) {
    return this.projects.get(tenant.id, id);
  }

  @Patch(':id')
  @TenantAccess({ role: 'editor', scopes: ['projects:write'] })
  @ApiOperation({ summary: 'Update a project' })
  @ApiErrors(...BODY_ERRORS)
  @ApiOkResponse({ type: ProjectDto })
  update(@CurrentTenant() tenant: TenantEntity, @Param('id') id: string, @Body() dto: UpdateProjectDto) {
    return this.projects.update(tenant.id, id, dto);
  }
}
