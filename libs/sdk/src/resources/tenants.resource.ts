import type { HttpTransport } from '../http-transport';
import type { AddTenantUserInput, CreateTenantInput, PageQuery, PaginateOptions, RequestOptions, Tenant, TenantUser } from '../sdk.types';
import { paginate } from './paginate';

const usersPath = (tenantId: string): string => `/api/tenants/${encodeURIComponent(tenantId)}/users`;

/** `/api/tenants`: the signed-in user's tenants and their members. */
export class TenantsResource {
  constructor(private readonly http: HttpTransport) {}

  /** Every tenant the caller belongs to. */
  async list(options?: RequestOptions): Promise<Tenant[]> {
    return (await this.http.request<Tenant[]>({ method: 'GET', path: '/api/tenants', options })).body;
  }

  /** A new tenant with the caller as its admin (user tokens only). */
  async create(input: CreateTenantInput, options?: RequestOptions): Promise<Tenant> {
    return (await this.http.request<Tenant>({ method: 'POST', path: '/api/tenants', body: input, options })).body;
  }

  /** One page of the tenant's members (default 100); see allUsers() for every member. */
  async users(tenantId: string, query: PageQuery = {}, options?: RequestOptions): Promise<TenantUser[]> {
    return (await this.http.request<TenantUser[]>({ method: 'GET', path: usersPath(tenantId), query: { ...query }, options })).body;
  }

  allUsers(tenantId: string, query: PaginateOptions = {}, options?: RequestOptions): AsyncGenerator<TenantUser, void, undefined> {
    return paginate<TenantUser>(this.http, usersPath(tenantId), { limit: query.pageSize }, options);
  }

  /** Adds a person by e-mail with a role (tenant admins only); someone not yet signed up joins on first sign-in. */
  async addUser(tenantId: string, input: AddTenantUserInput, options?: RequestOptions): Promise<TenantUser> {
    return (await this.http.request<TenantUser>({ method: 'POST', path: usersPath(tenantId), body: input, options })).body;
  }
}
