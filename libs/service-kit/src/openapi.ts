import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { allProblemTypes } from '@flagship/problem-details';

export interface OpenApiInfo {
  title: string;
  description: string;
  version: string;
}

/** The OpenAPI 3 document of an app, generated from its controllers and DTOs. */
export function buildOpenApiDocument(app: INestApplication, info: OpenApiInfo): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle(info.title)
    .setDescription(info.description)
    .setVersion(info.version)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, 'bearer')
    .build();
  const doc = SwaggerModule.createDocument(app, config, { operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}` });
  doc.components ??= {};
  doc.components.schemas ??= {};
  doc.components.schemas['Problem'] = {
    type: 'object',
    description: `RFC 9457 problem details. Types: ${allProblemTypes().map((t) => `/problems/${t.slug} (${t.status})`).join(', ')}.`,
    required: ['type', 'title', 'status', 'detail'],
    properties: {
      type: { type: 'string', example: '/problems/validation-failed' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      instance: { type: 'string', description: 'the request id (x-request-id)' },
      errors: { type: 'object', additionalProperties: { type: 'string' }, description: 'field -> message, on 422' },
    },
  };
  return doc;
}

/** Serves the document at /openapi.json and Swagger UI at /docs. */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject): void {
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', useGlobalPrefix: false });
}
