import type { HttpTransport } from '../http-transport';
import type { CreateProjectInput, PageQuery, PaginateOptions, Project, RequestOptions, UpdateProjectInput } from '../sdk.types';
import { paginate } from './paginate';

const id = (projectId: string): string => encodeURIComponent(projectId);

/** `/api/projects`. */
export class ProjectsResource {
  constructor(private readonly http: HttpTransport) {}

  /** One page (default 100); see listAll() for every project. */
  async list(query: PageQuery = {}, options?: RequestOptions): Promise<Project[]> {
    return (await this.http.request<Project[]>({ method: 'GET', path: '/api/projects', query: { ...query }, options })).body;
  }

  listAll(query: PaginateOptions = {}, options?: RequestOptions): AsyncGenerator<Project, void, undefined> {
    return paginate<Project>(this.http, '/api/projects', { limit: query.pageSize }, options);
  }

  async get(projectId: string, options?: RequestOptions): Promise<Project> {
    return (await this.http.request<Project>({ method: 'GET', path: `/api/projects/${id(projectId)}`, options })).body;
  }

  async create(input: CreateProjectInput, options?: RequestOptions): Promise<Project> {
    return (await this.http.request<Project>({ method: 'POST', path: '/api/projects', body: input, options })).body;
  }

  async update(projectId: string, patch: UpdateProjectInput, options?: RequestOptions): Promise<Project> {
    return (await this.http.request<Project>({ method: 'PATCH', path: `/api/projects/${id(projectId)}`, body: patch, options })).body;
  }
}
