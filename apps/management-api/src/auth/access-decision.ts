import { roleAtLeast, type TenantRole } from '@flagship/domain';
import type { TenantEntity } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { type CallerContext, PUBLIC_ROUTE } from '@flagship/service-kit';
import type { TenantsRepository, TenantWithRole } from '../tenants/tenants.repository';
import { PLATFORM_ADMIN_ONLY, TENANT_ACCESS, type TenantAccessRule, USERS_ONLY } from './auth.decorators';
import { AuthProblems } from './auth.errors';

/** What a route asks of its caller, as its decorators say. */
export interface RouteAccess {
  /** `@Public()`: no token, nothing checked. */
  public: boolean;
  /** `@PlatformAdminOnly()`. */
  platformAdminOnly: boolean;
  /** `@UsersOnly()`: a client token is refused. */
  usersOnly: boolean;
  /** `@TenantAccess(rule)`: the route acts inside one tenant. */
  tenant?: TenantAccessRule;
}

/** A route's access from its metadata; `read` looks a key up as Reflector.getAllAndOverride does (the handler's, else its class's). */
export function routeAccessOf(read: <T>(key: string) => T | undefined): RouteAccess {
  const tenant = read<TenantAccessRule>(TENANT_ACCESS);
  return {
    public: read<boolean>(PUBLIC_ROUTE) === true,
    platformAdminOnly: read<boolean>(PLATFORM_ADMIN_ONLY) === true,
    usersOnly: read<boolean>(USERS_ONLY) === true,
    ...(tenant ? { tenant } : {}),
  };
}

/** A route that only acts inside a tenant under `rule` (the evaluate route and flag streams, answered outside Nest's guards). */
export const tenantRoute = (rule: TenantAccessRule): RouteAccess => ({ public: false, platformAdminOnly: false, usersOnly: false, tenant: rule });

/** The tenant a request names for `rule`: its `:tenantId` path parameter, or X-Tenant-ID; an empty value names none. */
export function requestedTenant(rule: TenantAccessRule, params: Readonly<Record<string, unknown>>, headers: Readonly<Record<string, unknown>>): string | undefined {
  const named = rule.tenantFrom === 'path' ? params['tenantId'] : headers['x-tenant-id'];
  return typeof named === 'string' && named !== '' ? named : undefined;
}

/** The canonical tenant: the earliest where the user is admin, else the earliest of all. */
export function canonicalOf(memberships: TenantWithRole[]): TenantWithRole | undefined {
  return memberships.find((x) => x.role === 'admin') ?? memberships[0];
}

/** What the decision reads of tenants and memberships; asked only when the answer depends on it. */
export type TenantLookups = Pick<TenantsRepository, 'findById' | 'membershipWithTenant' | 'tenantsOfUser'>;

export interface AccessQuestion {
  route: RouteAccess;
  caller: CallerContext;
  /** The signed-in user's id (user tokens). */
  userId?: string;
  /** The tenant the request names (requestedTenant), if any. */
  requested?: string;
  /** The request's method is safe (GET, HEAD): it reads and changes nothing. */
  safe?: boolean;
  /** Now, in ms: an expired sandbox takes no more changes. */
  now: number;
  /** Told of the membership a user acts through once it is found, whether or not their role suffices (an attempt is an access). */
  member?: (membership: TenantWithRole) => void;
}

export interface AccessGrant {
  /** The tenant the caller acts in, on a route with a tenant rule. */
  tenant?: TenantEntity;
  /** A user's role in it. */
  role?: TenantRole;
}

const refuse = (slug: keyof typeof AuthProblems, detail: string, extensions: Record<string, unknown> = {}): never => {
  throw new ProblemException(AuthProblems[slug], detail, extensions);
};

/**
 * Whether a caller may call a route, and in which tenant (CONTRACT.md sections 2 and 3): the whole
 * role x scope x tenant matrix in one function, with no I/O of its own (`tenants` is asked only when
 * the answer depends on it). Refuses with the 400/403/404 problem the caller gets.
 */
export async function decideAccess(q: AccessQuestion, tenants: TenantLookups): Promise<AccessGrant> {
  const { route, caller } = q;
  if (route.public) return {};
  if (route.platformAdminOnly && !caller.isPlatformAdmin) refuse('platform-admin-required', 'Only platform admins may call this endpoint.');
  if (route.usersOnly && caller.kind !== 'user') refuse('users-only', 'This endpoint takes a user token, not a client token.');
  const rule = route.tenant;
  if (!rule) return {};
  const grant = caller.kind === 'client' ? await forClient(caller, rule, q.requested, tenants) : await forUser(q, rule, tenants);
  const tenant = grant.tenant!;
  // An expired sandbox stays readable (admin-only reads too) and evaluable, but takes no more changes.
  if (tenant.isSandbox && tenant.sandboxExpiresAt && tenant.sandboxExpiresAt.getTime() < q.now && rule.role !== 'viewer' && !q.safe) {
    refuse('sandbox-expired', `This sandbox expired on ${tenant.sandboxExpiresAt.toISOString()}; it is read-only.`);
  }
  return grant;
}

/** A client token acts only in its own tenant, with every scope the rule names; a rule without scopes is for users. */
async function forClient(caller: CallerContext, rule: TenantAccessRule, requested: string | undefined, tenants: TenantLookups): Promise<AccessGrant> {
  if (!rule.scopes) refuse('users-only', 'This endpoint takes a user token, not a client token.');
  if (requested !== undefined && requested !== caller.tenantId) refuse('tenant-access-denied', 'A client token acts only in its own tenant.');
  const missing = rule.scopes!.filter((s) => !caller.scopes?.includes(s));
  if (missing.length) {
    refuse('insufficient-scope', `The token lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')}.`, { requiredScopes: [...rule.scopes!] });
  }
  const tenant = caller.tenantId ? await tenants.findById(caller.tenantId) : null;
  if (!tenant) refuse('tenant-access-denied', "The client's tenant no longer exists.");
  return { tenant: tenant! };
}

/**
 * A user acts in the tenant they name when they are its member, else in their canonical tenant;
 * with at least the rule's role there. Whether a tenant they are not in exists is told only to
 * platform admins (404); anyone else learns nothing of foreign tenants (403).
 */
async function forUser({ caller, userId, requested, member }: AccessQuestion, rule: TenantAccessRule, tenants: TenantLookups): Promise<AccessGrant> {
  if (!userId) throw new Error('a user caller without its user');
  let membership: TenantWithRole | null | undefined;
  if (requested === undefined) {
    if (rule.headerRequired) refuse('tenant-header-required', 'Send the X-Tenant-ID header naming the tenant to act in.');
    membership = canonicalOf(await tenants.tenantsOfUser(userId));
    if (!membership) refuse('tenant-access-denied', 'You belong to no tenant.');
  } else {
    membership = await tenants.membershipWithTenant(requested, userId);
    if (!membership) {
      if (caller.isPlatformAdmin && !(await tenants.findById(requested))) refuse('tenant-not-found', `No tenant ${requested}.`);
      refuse('tenant-access-denied', 'You are not a member of this tenant.');
    }
  }
  member?.(membership!);
  const { tenant, role } = membership!;
  if (!roleAtLeast(role, rule.role)) refuse('role-required', `This needs the ${rule.role} role; you are ${role} here.`, { requiredRole: rule.role });
  return { tenant, role };
}
