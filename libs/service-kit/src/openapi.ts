import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { problemSchemas } from '@flagship/problem-details';

export interface OpenApiInfo {
  title: string;
  description: string;
  version: string;
}

const JSON_VALUE_SCHEMA = {
  description: 'any JSON value',
  oneOf: [
    { type: 'string' },
    { type: 'number' },
    // OpenAPI 3.0 has no null type: a nullable branch carries it.
    { type: 'boolean', nullable: true },
    { type: 'array', items: { $ref: '#/components/schemas/JsonValue' } },
    { type: 'object', additionalProperties: { $ref: '#/components/schemas/JsonValue' } },
  ],
};

/**
 * A property holding any JSON value: `@ApiProperty(JSON_VALUE)`. Inline rather than a `$ref` to the
 * `JsonValue` component (which nested values refer to), so the property may keep its own description.
 */
export const JSON_VALUE = { oneOf: JSON_VALUE_SCHEMA.oneOf };

/**
 * A route answered outside Nest (on the lean HTTP layer), which Swagger cannot see: its operation is
 * declared beside it, and the app both registers the route and documents it from this one object.
 */
/** An OpenAPI operation, as Swagger's document types it. */
export type OperationObject = NonNullable<OpenAPIObject['paths'][string]['post']>;

export interface DeclaredRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The router's template, `/api/flags/:flagKey/evaluate`; the document writes `{flagKey}`. */
  path: string;
  operation: OperationObject;
}

export interface DeclaredRoutes {
  routes: readonly DeclaredRoute[];
  /** DTO classes their operations refer to (`#/components/schemas/<name>`), generated as Swagger generates a controller's. */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  models?: readonly Function[];
}

/** `/a/:b/c` as an OpenAPI path, `/a/{b}/c`. */
export function openApiPath(template: string): string {
  return template.replace(/\/:(\w+)/g, '/{$1}');
}

/** The OpenAPI 3 document of an app, generated from its controllers and DTOs, plus its declared lean routes. */
export function buildOpenApiDocument(app: INestApplication, info: OpenApiInfo, declared?: DeclaredRoutes): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle(info.title)
    .setDescription(info.description)
    .setVersion(info.version)
    // Relative: the document describes the server that serves it.
    .addServer('/')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, 'bearer')
    .build();
  const doc = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
    extraModels: [...(declared?.models ?? [])],
  });
  for (const route of declared?.routes ?? []) addOperation(doc, route);
  // package.json says UNLICENSED: the API is not open source (DocumentBuilder would add an empty url).
  doc.info.license = { name: 'Proprietary' };
  doc.components ??= {};
  doc.components.schemas ??= {};
  Object.assign(doc.components.schemas, problemSchemas(), { JsonValue: JSON_VALUE_SCHEMA });
  return doc;
}

/** A declared route's operation, its path placed after the longest path it extends (beside its resource, as a controller would list it). */
function addOperation(doc: OpenAPIObject, route: DeclaredRoute): void {
  const path = openApiPath(route.path);
  const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
  const existing = doc.paths[path];
  if (existing !== undefined) {
    if (existing[method] !== undefined) throw new Error(`${route.method} ${path} is both a Nest route and a declared one`);
    existing[method] = route.operation;
    return;
  }
  const paths = Object.keys(doc.paths);
  const parent = paths.filter((p) => path.startsWith(`${p}/`)).sort((a, b) => b.length - a.length)[0];
  const at = parent === undefined ? paths.length : paths.indexOf(parent) + 1;
  const entries = Object.entries(doc.paths);
  entries.splice(at, 0, [path, { [method]: route.operation }]);
  doc.paths = Object.fromEntries(entries);
}

/**
 * Serves the document at /openapi.json and Swagger UI at /docs. A factory is built on the first request
 * for either, once: scanning every controller and DTO is about 0.3 s of CPU that each boot paid before
 * any request needed it (a pod's start, every test app's); the OpenAPI spec still builds it whole.
 */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject | (() => OpenAPIObject)): void {
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', useGlobalPrefix: false });
}
