import { readFileSync, writeFileSync } from 'node:fs';
import { startTestApp, type RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, generateOpenApiTypes, http, OPENAPI_DOCUMENT, OPENAPI_SDK_TYPES, type TestEnvironment } from '@flagship/testing';
import { AppModule } from './app.module';
import { loadManagementApiConfig } from './env.schema';
import { managementApiDocument, setupOpenApi } from './openapi';

/**
 * The checked-in OpenAPI document is what the code generates; `npm run openapi` rewrites it, and the
 * SDK's types generated from it (libs/sdk/src/openapi.generated.ts, checked by openapi.generated.spec.ts).
 */
describe('management-api OpenAPI document', () => {
  let te: TestEnvironment;
  let svc: RunningApp;

  beforeAll(async () => {
    te = await createTestEnvironment();
    svc = await startTestApp(AppModule.forConfig(loadManagementApiConfig(te.env)), setupOpenApi);
  });

  afterAll(async () => {
    await svc?.close();
    await te?.teardown();
  });

  it('matches the checked-in file', () => {
    const generated = `${JSON.stringify(managementApiDocument(svc.app), null, 2)}\n`;
    if (process.env['UPDATE_OPENAPI'] === '1') {
      writeFileSync(OPENAPI_DOCUMENT, generated);
      writeFileSync(OPENAPI_SDK_TYPES, generateOpenApiTypes());
    }
    expect(JSON.parse(generated)).toEqual(JSON.parse(readFileSync(OPENAPI_DOCUMENT, 'utf8')));
  });

  it('is served at /openapi.json and /docs', async () => {
    const doc = await http(`${svc.url}/openapi.json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toMatch(/^3\./);
    expect(doc.body.components.schemas.Problem.required).toEqual(['type', 'title', 'status', 'detail']);
    const ui = await http<string>(`${svc.url}/docs`);
    expect(ui.status).toBe(200);
    expect(ui.body).toContain('swagger');
  });
});
