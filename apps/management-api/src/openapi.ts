import type { INestApplication } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import { buildOpenApiDocument, serveOpenApi } from '@flagship/service-kit';
import { EVALUATE_ROUTES } from './flags/evaluate/evaluate.route';

/** The document of the Nest controllers and of the evaluate route, which is answered outside Nest. */
export function managementApiDocument(app: INestApplication): OpenAPIObject {
  return buildOpenApiDocument(app, {
    title: 'Flagship management API',
    description: 'Feature flags, projects, tenants, billing and OAuth clients. Errors are RFC 9457 problem details.',
    version: '1',
  }, EVALUATE_ROUTES);
}

/** `/openapi.json` and `/docs` of the running API. */
export function setupOpenApi(app: INestApplication): void {
  serveOpenApi(app, () => managementApiDocument(app));
}
