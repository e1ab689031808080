import type { HttpTransport } from '../http-transport';
import type { AddTenantUserInput, CreateTenantInput, Invitation, PageQuery, PaginateOptions, RequestOptions, Tenant, TenantUser, UpdateTenantUserInput } from '../sdk.types';
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

  /**
   * Invites a person by e-mail with a role (tenant admins only): a pending invitation, the same
   * whether or not the e-mail has an account. They join when they accept it (acceptInvitation).
   */
  async addUser(tenantId: string, input: AddTenantUserInput, options?: RequestOptions): Promise<Invitation> {
    return (await this.http.request<Invitation>({ method: 'POST', path: usersPath(tenantId), body: input, options })).body;
  }

  /** The tenant's pending invitations (tenant admins only). */
  async invitations(tenantId: string, options?: RequestOptions): Promise<Invitation[]> {
    return (await this.http.request<Invitation[]>({ method: 'GET', path: `/api/tenants/${encodeURIComponent(tenantId)}/invitations`, options })).body;
  }

  /** Withdraws a pending invitation (tenant admins only). */
  async withdrawInvitation(tenantId: string, invitationId: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: `/api/tenants/${encodeURIComponent(tenantId)}/invitations/${encodeURIComponent(invitationId)}`, options });
  }

  /** The signed-in user's pending invitations (ApiError 403 email-not-verified while the identity provider has not verified the e-mail). */
  async myInvitations(options?: RequestOptions): Promise<Invitation[]> {
    return (await this.http.request<Invitation[]>({ method: 'GET', path: '/api/invitations', options })).body;
  }

  /** Accepts one of the signed-in user's invitations: they join its tenant with its role. */
  async acceptInvitation(invitationId: string, options?: RequestOptions): Promise<Invitation> {
    return (await this.http.request<Invitation>({ method: 'POST', path: `/api/invitations/${encodeURIComponent(invitationId)}/accept`, options })).body;
  }

  /** Declines one of the signed-in user's invitations. */
  async declineInvitation(invitationId: string, options?: RequestOptions): Promise<Invitation> {
    return (await this.http.request<Invitation>({ method: 'POST', path: `/api/invitations/${encodeURIComponent(invitationId)}/decline`, options })).body;
  }

  /** A member's new role (tenant admins only); the tenant's last admin cannot step down (ApiError 409 last-admin). */
  async updateUser(tenantId: string, userId: string, input: UpdateTenantUserInput, options?: RequestOptions): Promise<TenantUser> {
    return (await this.http.request<TenantUser>({ method: 'PATCH', path: `${usersPath(tenantId)}/${encodeURIComponent(userId)}`, body: input, options })).body;
  }

  /** Removes a member (tenant admins only; never the last admin: ApiError 409). */
  async removeUser(tenantId: string, userId: string, options?: RequestOptions): Promise<void> {
    await this.http.request<void>({ method: 'DELETE', path: `${usersPath(tenantId)}/${encodeURIComponent(userId)}`, options });
  }
}
