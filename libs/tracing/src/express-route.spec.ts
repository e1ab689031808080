import { expressRoute, type ExpressRoutedRequest } from './express-route';

const routed = (fields: { route?: { path?: unknown }; baseUrl?: string }) => fields as ExpressRoutedRequest;

describe('expressRoute', () => {
  it("is the router's prefix and the matched route's template, never the raw path", () => {
    expect(expressRoute(routed({ route: { path: '/api/projects/:projectId/flags/:key' }, baseUrl: '' }))).toBe('/api/projects/:projectId/flags/:key');
    expect(expressRoute(routed({ route: { path: '/flags/:key' }, baseUrl: '/api' }))).toBe('/api/flags/:key');
    expect(expressRoute(routed({ route: { path: '/healthz' } }))).toBe('/healthz');
  });

  it("is undefined when no route answered: none matched, Nest's catch-all of unknown routes, a path that is no template", () => {
    expect(expressRoute(routed({}))).toBeUndefined();
    expect(expressRoute(routed({ route: { path: '/{*path}' }, baseUrl: '' }))).toBeUndefined();
    expect(expressRoute(routed({ route: { path: /^\/x/ } }))).toBeUndefined();
  });
});
