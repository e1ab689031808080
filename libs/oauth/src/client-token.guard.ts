import { type CanActivate, createParamDecorator, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import passport from 'passport';
import { callerOf, PUBLIC_ROUTE, setCaller } from '@flagship/service-kit';
import { type ClientPrincipal, clientCallerContext } from './client-principal';
import { ClientTokenStrategy } from './client-token.strategy';
import { InvalidTokenError, insufficientScopeProblem, invalidTokenProblem } from './oauth.errors';

export { Public, PUBLIC_ROUTE } from '@flagship/service-kit';

/** True for a route marked `@Public()` (the token endpoint, discovery documents, health). */
export function isPublicRoute(reflector: Reflector, context: ExecutionContext): boolean {
  return reflector.getAllAndOverride<boolean | undefined>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()]) === true;
}

type RequestWithClient = Request & { oauthClient?: ClientPrincipal };

export function setClientPrincipal(req: Request, principal: ClientPrincipal): void {
  (req as RequestWithClient).oauthClient = principal;
}

/** The client principal the guard (or another guard through `setClientPrincipal`) attached. */
export function clientPrincipalOf(req: Request): ClientPrincipal | undefined {
  return (req as RequestWithClient).oauthClient;
}

/** The verified client of a route behind ClientTokenGuard. */
export const Principal = createParamDecorator((_: unknown, ctx: ExecutionContext): ClientPrincipal => {
  const principal = clientPrincipalOf(ctx.switchToHttp().getRequest<Request>());
  if (!principal) throw new Error('@Principal() used on a route without ClientTokenGuard');
  return principal;
});

/**
 * Authenticates a request's client access token through passport and the ClientTokenStrategy; a
 * refusal is the 401 invalid-token problem (with its Bearer challenge). For every guard that
 * accepts client tokens, so all of them take the same path.
 */
export function authenticateClient(strategy: ClientTokenStrategy, req: Request, res: Response): Promise<ClientPrincipal> {
  return new Promise((resolve, reject) => {
    // passport augments the strategy object with per-request actions, so each request gets its own
    // object with the strategy as prototype (what passport does for a named strategy). Passing our
    // instance rather than its name keeps clear of passport's process-wide registry, where the last
    // app constructed in a process (tests boot several) would win.
    const perRequest = Object.create(strategy) as ClientTokenStrategy;
    const middleware = passport.authenticate(perRequest, { session: false }, (err: unknown, user: unknown) => {
      if (err) reject(err instanceof InvalidTokenError ? invalidTokenProblem(err) : err);
      else if (user) resolve(user as ClientPrincipal);
      else reject(invalidTokenProblem(new InvalidTokenError('malformed', 'The access token is malformed.')));
    }) as (req: Request, res: Response, next: (err?: unknown) => void) => void;
    middleware(req, res, (err?: unknown) => reject(err ?? new Error('passport ended without a result')));
  });
}

/**
 * Routes for OAuth clients only: a valid, unrevoked access token (ClientTokenStrategy), else a 401 problem
 * with `WWW-Authenticate: Bearer`. Sets the ClientPrincipal (`@Principal()`) and the CallerContext
 * later guards read. Routes marked `@Public()` pass.
 */
@Injectable()
export class ClientTokenGuard implements CanActivate {
  constructor(
    private readonly strategy: ClientTokenStrategy,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http' || isPublicRoute(this.reflector, context)) return true;
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const principal = await authenticateClient(this.strategy, req, http.getResponse<Response>());
    setClientPrincipal(req, principal);
    setCaller(req, clientCallerContext(principal));
    return true;
  }
}

export const REQUIRED_SCOPES = 'oauth:required-scopes';

/** Scopes a client token must hold for the route (all of them). Users are left to role checks. */
export const RequireScopes = (...scopes: string[]): MethodDecorator & ClassDecorator => SetMetadata(REQUIRED_SCOPES, scopes);

/** Enforces `@RequireScopes` on client callers: 403 `insufficient-scope`. Runs after the auth guard. */
@Injectable()
export class ScopesGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const required = this.reflector.getAllAndOverride<string[] | undefined>(REQUIRED_SCOPES, [context.getHandler(), context.getClass()]);
    if (!required || required.length === 0 || context.getType() !== 'http') return true;
    const caller = callerOf(context.switchToHttp().getRequest<Request>());
    if (!caller) throw invalidTokenProblem(new InvalidTokenError('missing', 'A bearer access token is required.'));
    if (caller.kind !== 'client') return true;
    const granted = new Set(caller.scopes ?? []);
    if (!required.every((s) => granted.has(s))) throw insufficientScopeProblem(required);
    return true;
  }
}
