/**
 * Bad input, for every operation of the OpenAPI document that takes a body: wrong content type,
 * malformed JSON, an oversize body, a non-object body, unknown and missing fields. Each gets its
 * clear 4xx problem, never a 500, and nothing is written. Driven by the generated document, so a
 * new endpoint is covered the day it appears.
 */
import { Client } from 'pg';
import { http } from '@flagship/testing';
import { managementApiDocument } from './openapi';
import { ManagementApiFixture, PLATFORM_ADMIN, type SignedUp } from './testing/management-api.fixture';

interface Operation {
  method: string;
  path: string;
  jsonBody: boolean;
  required: string[];
  freeForm: boolean;
  /** The body may be a JSON array (the LaunchDarkly import takes a plain array of flags). */
  acceptsArray: boolean;
}

describe('bad input on every endpoint with a body (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let root: SignedUp;
  let operations: Operation[];
  const params: Record<string, string> = {};

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    root = await f.signUp(PLATFORM_ADMIN);
    const auth = { token: root.idToken, tenant: root.tenantId };
    const project = await f.call('POST', '/api/projects', { ...auth, json: { name: 'p' } });
    await f.call('POST', '/api/flags', { ...auth, json: { key: 'f1', name: 'f', type: 'boolean', defaultValue: true } });
    const client = await f.call('POST', '/api/oauth/clients', { ...auth, json: { name: 'c', scopes: ['flags:read'] } });
    Object.assign(params, {
      flagKey: 'f1',
      projectId: project.body.id,
      id: project.body.id,
      tenantId: root.tenantId,
      clientId: client.body.clientId,
      provider: 'google',
      userId: 'me',
      tourKey: 'intro',
    });
    const doc = JSON.parse(JSON.stringify(managementApiDocument(f.svc.app)));
    const schemas = doc.components.schemas;
    operations = [];
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const content = op.requestBody?.content;
        if (!content) continue;
        const media = Object.keys(content)[0];
        const schema = content[media].schema;
        const resolved = schema?.$ref ? schemas[schema.$ref.split('/').pop()] : schema;
        operations.push({
          method: method.toUpperCase(),
          path: path.replace(/\{(\w+)\}/g, (_, name: string) => params[name]),
          jsonBody: media === 'application/json',
          required: resolved?.required ?? [],
          freeForm: resolved?.additionalProperties === true,
          acceptsArray: resolved?.type === 'array' || (resolved?.oneOf ?? []).some((o: { type?: string }) => o.type === 'array'),
        });
      }
    }
  });
  afterAll(async () => {
    await f?.stop();
  });

  const send = (op: Operation, body: string, contentType: string) =>
    http(`${f.url}${op.path}`, {
      method: op.method,
      body,
      headers: { 'content-type': contentType, authorization: `Bearer ${root.idToken}`, 'x-tenant-id': root.tenantId },
    });

  const counts = async () => {
    const db = new Client({ connectionString: f.te.db.url });
    await db.connect();
    const { rows } = await db.query(
      `SELECT (SELECT count(*) FROM flags) f, (SELECT count(*) FROM projects) p, (SELECT count(*) FROM tenants) t,
              (SELECT count(*) FROM oauth_clients) c, (SELECT count(*) FROM environments) e, (SELECT count(*) FROM users) u,
              (SELECT count(*) FROM memberships) m, (SELECT count(*) FROM flag_audit) a, (SELECT count(*) FROM credit_grants) g`,
    );
    await db.end();
    return rows[0];
  };

  it('covers every body-taking operation of the document', () => {
    expect(operations.length).toBeGreaterThanOrEqual(20);
    expect(operations.filter((o) => !o.jsonBody).map((o) => o.path)).toEqual(['/oauth/token']);
  });

  it('415 for a body of another content type, 400 for malformed JSON, 413 over 1 MiB; nothing written', async () => {
    const before = await counts();
    for (const op of operations.filter((o) => o.jsonBody)) {
      const wrongType = await send(op, 'name=x', 'text/plain');
      expect([op.method, op.path, wrongType.status, wrongType.headers.get('content-type')]).toEqual([op.method, op.path, 415, expect.stringMatching(/problem\+json/)]);
      const malformed = await send(op, '{"name": ', 'application/json');
      expect([op.method, op.path, malformed.status, malformed.body.type]).toEqual([op.method, op.path, 400, '/problems/malformed-json']);
      const huge = await send(op, JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 1) }), 'application/json');
      expect([op.method, op.path, huge.status]).toEqual([op.method, op.path, 413]);
    }
    const form = operations.find((o) => !o.jsonBody)!;
    expect((await send(form, '{"grant_type":"client_credentials"}', 'application/json')).status).toBe(415);
    expect(await counts()).toEqual(before);
  });

  it('422 with errors for a non-object body, unknown fields and missing required fields; nothing written', async () => {
    const before = await counts();
    for (const op of operations.filter((o) => o.jsonBody)) {
      const array = await send(op, '[1,2]', 'application/json');
      const arrayErrors = op.acceptsArray ? { '[0]': expect.any(String), '[1]': expect.any(String) } : { body: 'must be a JSON object' };
      expect([op.method, op.path, array.status, array.body.errors]).toEqual([op.method, op.path, 422, arrayErrors]);
      const scalar = await send(op, '"text"', 'application/json');
      expect([op.method, op.path, scalar.status]).toEqual([op.method, op.path, 400]);
      if (!op.freeForm) {
        const unknown = await send(op, JSON.stringify({ definitelyNotAField: 1 }), 'application/json');
        expect([op.method, op.path, unknown.status, unknown.body.errors?.definitelyNotAField]).toEqual([op.method, op.path, 422, 'is not an allowed field']);
      }
      if (op.required.length) {
        const empty = await send(op, '{}', 'application/json');
        expect([op.method, op.path, empty.status]).toEqual([op.method, op.path, 422]);
        for (const field of op.required) expect([op.path, field, empty.body.errors?.[field]]).toEqual([op.path, field, expect.any(String)]);
      }
    }
    expect(await counts()).toEqual(before);
  });

  it('wrong types in every required field are 422, never 500', async () => {
    for (const op of operations.filter((o) => o.jsonBody && o.required.length)) {
      for (const wrong of [12345, true, null, [], { nested: 1 }]) {
        const body = Object.fromEntries(op.required.map((k) => [k, wrong]));
        const res = await send(op, JSON.stringify(body), 'application/json');
        expect([op.path, JSON.stringify(wrong), res.status < 500]).toEqual([op.path, JSON.stringify(wrong), true]);
        // A value of the wrong type is refused; `true` may be the right type (product tours' `completed`).
        const expected = wrong === true && res.status < 300 ? res.status : 422;
        expect([op.path, JSON.stringify(wrong), [400, 401, 404, expected].includes(res.status)]).toEqual([op.path, JSON.stringify(wrong), true]);
      }
    }
  });
});
