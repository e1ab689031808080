import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApp, type RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, http, type TestEnvironment } from '@flagship/testing';
import { AppModule } from './app.module';
import { loadManagementApiConfig } from './env.schema';
import { managementApiDocument, setupOpenApi } from './openapi';

const CHECKED_IN = join(__dirname, '../../../openapi/management-api.openapi.json');

/** The checked-in OpenAPI document is what the code generates; `npm run openapi` rewrites it. */
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
    if (process.env['UPDATE_OPENAPI'] === '1') writeFileSync(CHECKED_IN, generated);
    expect(JSON.parse(generated)).toEqual(JSON.parse(readFileSync(CHECKED_IN, 'utf8')));
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
