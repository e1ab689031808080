import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { callerOf } from '@flagship/service-kit';
import { requestedTenant, routeAccessOf } from './access-decision';
import type { AuthenticatedRequest } from './auth.decorators';
import { TenantAccessResolver } from './tenant-access.resolver';

/**
 * Applies each route's access (its @PlatformAdminOnly, @UsersOnly and @TenantAccess, decided by
 * decideAccess through TenantAccessResolver, as for the evaluate route): users by membership role,
 * clients by their token's tenant and scopes (CONTRACT.md sections 2, 3); resolves the active tenant.
 */
@Injectable()
export class AuthorizationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly access: TenantAccessResolver,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const caller = callerOf(req);
    if (!caller) return true; // a public route
    const route = routeAccessOf((key) => this.reflector.getAllAndOverride(key, targets));
    const requested = route.tenant ? requestedTenant(route.tenant, req.params, req.headers) : undefined;
    // expiresAt only matters to what is cached from it; the guards cache nothing.
    const safe = req.method === 'GET' || req.method === 'HEAD';
    const tenant = await this.access.authorize({ caller, ...(req.authUser ? { user: req.authUser } : {}), expiresAt: Infinity }, route, requested, safe);
    if (tenant) req.tenant = tenant;
    return true;
  }
}
