import type { IncomingMessage } from 'node:http';

/** What Express (Nest's platform) leaves on a request it routed. */
export type ExpressRoutedRequest = IncomingMessage & { route?: { path?: unknown }; baseUrl?: string };

/**
 * The template of the Express route that answered (`/api/projects/:projectId/flags/:key`: the
 * router's prefix and the matched route's path), never the raw path; undefined when none did (Nest's
 * catch-all `/{*path}` of unknown routes included). The one rule for span names and metric labels.
 */
export function expressRoute(req: ExpressRoutedRequest): string | undefined {
  const path = req.route?.path;
  return typeof path !== 'string' || path === '/{*path}' ? undefined : `${req.baseUrl ?? ''}${path}`;
}
