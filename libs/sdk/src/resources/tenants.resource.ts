import type { HttpTransport } from '../http-transport';
import type { AddTenantUserInput, CreateTenantInput, PageQuery, PaginateOptions, RequestOptions, Tenant, TenantUser, UpdateTenantUserInput } from '../sdk.types';
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

  /** A member's new role (tenant admins only); the tenant's last admin cannot step down (ApiError 409 last-admin). */
  async updateUser(tenantId: string, userId: string, input: UpdateTenantUserInput, options?: RequestOptions): Promise<TenantUser> {
    return (await this.http.request<TenantUser>({ method: 'PATCH', path: `${usersPath(tenantId)}/${encodeURIComponent(userId)}`, body: input, options })).body;
  }

  /** Removes a member, or withdraws the invitation of one who never signed in (tenant admins only; never the last admin: ApiError 409). */
  async removeUser(tenantId: string, userId: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: `${usersPath(tenantId)}/${encodeURIComponent(userId)}`, options });
  }
}
