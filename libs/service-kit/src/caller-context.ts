import type { Request } from 'express';
import type { Plan, TenantRole } from '@flagship/domain';

/**
 * Who is calling, as the authentication and tenant guards resolved it. Later guards and
 * interceptors (rate limits, idempotency, roles, scopes) read only this.
 */
export interface CallerContext {
  kind: 'user' | 'client';
  /** `user:<uuid>` or `client:<clientId>`: stable, unique across kinds. */
  callerId: string;
  /** The active tenant, once resolved. */
  tenantId?: string;
  plan?: Plan;
  /** The user's role in the active tenant (users only). */
  role?: TenantRole;
  /** Granted scopes (clients only). */
  scopes?: string[];
  isPlatformAdmin?: boolean;
}

export type RequestWithCaller = Request & { caller?: CallerContext };

export function callerOf(req: Request): CallerContext | undefined {
  return (req as RequestWithCaller).caller;
}

export function setCaller(req: Request, caller: CallerContext): void {
  (req as RequestWithCaller).caller = caller;
}
