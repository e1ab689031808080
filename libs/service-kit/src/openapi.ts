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

/** The OpenAPI 3 document of an app, generated from its controllers and DTOs. */
export function buildOpenApiDocument(app: INestApplication, info: OpenApiInfo): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle(info.title)
    .setDescription(info.description)
    .setVersion(info.version)
    // Relative: the document describes the server that serves it.
    .addServer('/')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, 'bearer')
    .build();
  const doc = SwaggerModule.createDocument(app, config, { operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}` });
  // package.json says UNLICENSED: the API is not open source (DocumentBuilder would add an empty url).
  doc.info.license = { name: 'Proprietary' };
  doc.components ??= {};
  doc.components.schemas ??= {};
  Object.assign(doc.components.schemas, problemSchemas(), { JsonValue: JSON_VALUE_SCHEMA });
  return doc;
}

/** Serves the document at /openapi.json and Swagger UI at /docs. */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject): void {
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', useGlobalPrefix: false });
}
