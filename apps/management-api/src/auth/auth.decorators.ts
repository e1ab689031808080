import { applyDecorators, createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';
import type { Request } from 'express';
import type { Scope, TenantRole } from '@flagship/domain';
import { callerOf, type CallerContext } from '@flagship/service-kit';
import type { TenantEntity } from '@flagship/persistence';
import type { UserEntity } from '../users/user.entity';
import type { TenantPrincipal } from './tenant-access.resolver';

export const TENANT_ACCESS = 'auth:tenant-access';
export const PLATFORM_ADMIN_ONLY = 'auth:platform-admin';
export const USERS_ONLY = 'auth:users-only';

export { Public, PUBLIC_ROUTE } from '@flagship/service-kit';

export interface TenantAccessRule {
  /** The weakest role a user needs in the active tenant. */
  role: TenantRole;
  /** Scopes a client token needs; a route without `scopes` is for users only. */
  scopes?: readonly Scope[];
  /** The seed marks X-Tenant-ID required here: a user who omits it gets 400 (a client's token names its tenant). */
  headerRequired?: boolean;
  /** Take the tenant from the `:tenantId` path parameter instead of X-Tenant-ID. */
  tenantFrom?: 'header' | 'path';
}

/** The route acts inside one tenant: resolves it (X-Tenant-ID or the canonical tenant) and checks role or scopes. */
export const TenantAccess = (rule: TenantAccessRule): MethodDecorator & ClassDecorator =>
  rule.tenantFrom === 'path'
    ? // The guard reads the path parameter, so the handler may not name it: the document must.
      applyDecorators(SetMetadata(TENANT_ACCESS, rule), ApiParam({ name: 'tenantId', format: 'uuid' }))
    : SetMetadata(TENANT_ACCESS, rule);

/** Signed-in users only: a client token is refused (403). */
export const UsersOnly = (): MethodDecorator & ClassDecorator => SetMetadata(USERS_ONLY, true);

/** Platform admins only (`PLATFORM_ADMIN_EMAILS`). */
export const PlatformAdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(PLATFORM_ADMIN_ONLY, true);

/** What the user's ID token says of their e-mail on this request (users only). */
export interface VerifiedEmail {
  email: string;
  verified: boolean;
}

/** `authExpiresAt`: when the request's token stops being valid (ms), for what outlives the request (a stream). */
export type AuthenticatedRequest = Request & { authUser?: UserEntity; authEmail?: VerifiedEmail; authExpiresAt?: number; tenant?: TenantEntity };

export const Caller = createParamDecorator((_: unknown, ctx: ExecutionContext): CallerContext => {
  const caller = callerOf(ctx.switchToHttp().getRequest<Request>());
  if (!caller) throw new Error('Caller used on a route without authentication');
  return caller;
});

/** The signed-in user (user tokens only). */
export const CurrentUser = createParamDecorator((_: unknown, ctx: ExecutionContext): UserEntity | undefined => {
  return ctx.switchToHttp().getRequest<AuthenticatedRequest>().authUser;
});

/** The e-mail of the signed-in user's ID token and whether the identity provider verified it (user tokens only). */
export const CurrentEmail = createParamDecorator((_: unknown, ctx: ExecutionContext): VerifiedEmail | undefined => {
  return ctx.switchToHttp().getRequest<AuthenticatedRequest>().authEmail;
});

/** The active tenant resolved by AuthorizationGuard (from @TenantAccess). */
export const CurrentTenant = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantEntity => {
  const tenant = ctx.switchToHttp().getRequest<AuthenticatedRequest>().tenant;
  if (!tenant) throw new Error('CurrentTenant used on a route without @TenantAccess');
  return tenant;
});

/** The caller, its active tenant and its token's expiry, on a @TenantAccess route: what a response that outlives the request (a stream) is held to. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantPrincipal => {
  const req = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
  const caller = callerOf(req);
  if (!caller || !req.tenant || req.authExpiresAt === undefined) throw new Error('CurrentPrincipal used on a route without @TenantAccess');
  return { caller, tenant: req.tenant, expiresAt: req.authExpiresAt };
});

/**
 * A request header's value, or undefined when absent or empty. Not `@Headers(name)`: Swagger
 * documents that as a required header of its own (lower-cased), beside the route's `@ApiHeader`.
 */
export const OptionalHeader = createParamDecorator((name: string, ctx: ExecutionContext): string | undefined => {
  const value = ctx.switchToHttp().getRequest<Request>().headers[name.toLowerCase()];
  return typeof value === 'string' && value !== '' ? value : undefined;
});
