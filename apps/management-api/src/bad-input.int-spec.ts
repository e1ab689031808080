/**
 * Bad input, for every operation of the OpenAPI document: for those taking a body, wrong content
 * type, malformed JSON, an oversize body, a non-object body, unknown and missing fields, JSON nested
 * 10,000 deep, NUL and lone surrogates in every string field, all-null bodies; for every path
 * parameter, control characters; for every query parameter, NUL; for every list, forged cursors.
 * Each gets its clear 4xx problem, never a 500, and nothing is written. Driven by the generated
 * document, so a new endpoint is covered the day it appears.
 */
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
  /** The body's declared properties and their schemas (refs resolved one level). */
  properties: Record<string, any>;
}

/** Every operation of the document, with or without a body. */
interface AnyOperation {
  method: string;
  /** The path template, `/api/flags/{flagKey}`. */
  template: string;
  pathParams: string[];
  queryParams: string[];
  hasBody: boolean;
  /** Answers 200 with an event stream, which does not end: only its status and headers are read. */
  eventStream: boolean;
}

const NUL = 'a\u0000b';
const LONE_SURROGATE = 'a\ud800b';
const deepArray = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;

describe('bad input on every endpoint with a body (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let root: SignedUp;
  let operations: Operation[];
  let allOperations: AnyOperation[];
  let schemas: Record<string, any>;
  const params: Record<string, string> = {};
  const fill = (template: string, override: Record<string, string> = {}) =>
    template.replace(/\{(\w+)\}/g, (_, name: string) => override[name] ?? encodeURIComponent(params[name]));

  beforeAll(async () => {
    // Hundreds of requests of one free tenant in a minute, more with every endpoint added: the tenant
    // rate limit (its own specs prove it) would answer 429 before the validation this file is about.
    f = await ManagementApiFixture.start({ RATE_LIMIT_FREE: '100000' });
    root = await f.signUp(PLATFORM_ADMIN);
    const auth = { token: root.idToken, tenant: root.tenantId };
    const project = await f.call('POST', '/api/projects', { ...auth, json: { name: 'p' } });
    await f.call('POST', '/api/flags', { ...auth, json: { key: 'f1', name: 'f', type: 'boolean', defaultValue: true } });
    const client = await f.call('POST', '/api/oauth/clients', { ...auth, json: { name: 'c', scopes: ['flags:read'] } });
    const invitation = await f.call('POST', `/api/tenants/${root.tenantId}/users`, { ...auth, json: { email: 'pending-invitee@flagship.test', role: 'viewer' } });
    // Hears segment changes: the segments written below give its delivery log two entries.
    const webhook = await f.call('POST', '/api/webhooks', { ...auth, json: { url: 'https://hooks.example.com/bad-input', events: ['segment.updated'] } });
    Object.assign(params, {
      webhookId: webhook.body.id,
      invitationId: invitation.body.id,
      flagKey: 'f1',
      projectId: project.body.id,
      id: project.body.id,
      tenantId: root.tenantId,
      clientId: client.body.clientId,
      provider: 'google',
      userId: 'me',
      tourKey: 'intro',
      kind: 'product',
      scopeId: 'core',
    });
    // Two budgets, so their list has a second page.
    await f.call('PUT', '/api/billing/budgets/product/core', { ...auth, json: { monthlyCapMicroCredits: 1 } });
    await f.call('PUT', `/api/billing/budgets/client/${client.body.clientId}`, { ...auth, json: { monthlyCapMicroCredits: 1 } });
    const doc = JSON.parse(JSON.stringify(managementApiDocument(f.svc.app)));
    schemas = doc.components.schemas;
    operations = [];
    allOperations = [];
    for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        allOperations.push({
          method: method.toUpperCase(),
          template: path,
          // From the template itself: a parameter the document forgets to declare is still tried.
          pathParams: [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]),
          queryParams: (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name),
          hasBody: op.requestBody !== undefined,
          eventStream: op.responses?.['200']?.content?.['text/event-stream'] !== undefined,
        });
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
          properties: resolved?.properties ?? {},
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
    const { rows } = await f.sql(
      `SELECT (SELECT count(*) FROM flags) f, (SELECT count(*) FROM projects) p, (SELECT count(*) FROM tenants) t,
              (SELECT count(*) FROM oauth_clients) c, (SELECT count(*) FROM environments) e, (SELECT count(*) FROM users) u,
              (SELECT count(*) FROM memberships) m, (SELECT count(*) FROM flag_audit) a, (SELECT count(*) FROM credit_grants) g,
              (SELECT count(*) FROM invitations) i, (SELECT count(*) FROM invitations WHERE status = 'pending') ip`,
    );
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

  it('an empty list where the document asks for at least one item is 422 naming the field; nothing written', async () => {
    const before = await counts();
    const tried: string[] = [];
    for (const op of operations.filter((o) => o.jsonBody)) {
      for (const [field, schema] of Object.entries<any>(op.properties)) {
        if (schema?.type !== 'array' || !(schema.minItems >= 1)) continue;
        tried.push(`${op.method} ${op.path} ${field}`);
        const res = await send(op, JSON.stringify({ [field]: [] }), 'application/json');
        expect([op.method, op.path, field, res.status, res.body.errors?.[field]]).toEqual([op.method, op.path, field, 422, expect.any(String)]);
      }
    }
    // A client needs at least one scope (a client with none could only ever have used the AI gateway).
    expect(tried).toContain('POST /api/oauth/clients scopes');
    expect(await counts()).toEqual(before);
  });

  it('wrong types in every required field are 422, never 500', async () => {
    for (const op of operations.filter((o) => o.jsonBody && o.required.length)) {
      for (const wrong of [12345, true, null, [], { nested: 1 }]) {
        const body = Object.fromEntries(op.required.map((k) => [k, wrong]));
        const res = await send(op, JSON.stringify(body), 'application/json');
        expect([op.path, JSON.stringify(wrong), res.status < 500]).toEqual([op.path, JSON.stringify(wrong), true]);
        // A value of the wrong type is refused; it may be the right type for every required field (a
        // boolean for product tours' `completed`, an integer for the low-balance threshold): then any 2xx.
        const rightType = op.required.every((k) => ofSchemaType(op.properties[k], wrong));
        const expected = rightType && res.status < 300 ? res.status : 422;
        expect([op.path, JSON.stringify(wrong), [400, 401, 404, expected].includes(res.status)]).toEqual([op.path, JSON.stringify(wrong), true]);
      }
    }
  });
  const expectProblem = (res: { status: number; headers: Headers; body: any }, label: unknown[], status?: number) => {
    expect([...label, res.status < 500, res.headers.get('content-type')]).toEqual([...label, true, expect.stringMatching(/^application\/problem\+json/)]);
    if (status !== undefined) expect([...label, res.status]).toEqual([...label, status]);
    expect([...label, typeof res.body.type, typeof res.body.detail]).toEqual([...label, 'string', 'string']);
  };

  it('JSON nested 10,000 deep (array or object, at the top or in a property) is 400 json-too-deep; nothing written', async () => {
    const before = await counts();
    for (const op of operations.filter((o) => o.jsonBody)) {
      const field = Object.keys(op.properties)[0] ?? 'context';
      const bodies = {
        'top-level array': deepArray(10000),
        'top-level object': deepObject(10000),
        'array in a property': `{"${field}": ${deepArray(10000)}}`,
        'object in a property': `{"${field}": ${deepObject(10000)}}`,
      };
      for (const [shape, body] of Object.entries(bodies)) {
        const res = await send(op, body, 'application/json');
        expectProblem(res, [op.method, op.path, shape], 400);
        expect([op.method, op.path, shape, res.body.type]).toEqual([op.method, op.path, shape, '/problems/json-too-deep']);
      }
    }
    expect(await counts()).toEqual(before);
  });

  /** A body putting `bad` in every string the property's schema allows, and the path each lands at. */
  const poisoned = (op: Operation, bad: string): { body: Record<string, unknown>; paths: string[] } => {
    const body: Record<string, unknown> = {};
    const paths: string[] = [];
    const entries = Object.entries(op.properties);
    if (entries.length === 0) {
      // A free-form body (a context): a string attribute, and a string nested in an attribute.
      body['key'] = 'u1';
      body['plan'] = bad;
      body['nested'] = { list: ['ok', bad] };
      paths.push('plan', 'nested.list[1]');
    }
    for (const [name, schema] of entries) {
      const ref = schema.$ref ?? schema.items?.$ref;
      if (schema.type === 'string') {
        body[name] = bad;
        paths.push(name);
      } else if (schema.type === 'array' && ref) {
        const item = schemas[ref.split('/').pop()];
        const inner = Object.entries<any>(item.properties ?? {}).find(([, s]) => s.type === 'string')?.[0] ?? 'name';
        body[name] = [{ [inner]: bad }];
        paths.push(`${name}[0].${inner}`);
      } else if (schema.type === 'array') {
        body[name] = [bad];
        paths.push(`${name}[0]`);
      } else if (schema.type === 'object' || (schema.type === undefined && ref === undefined)) {
        body[name] = { inner: bad };
        paths.push(`${name}.inner`);
      }
    }
    return { body, paths };
  };

  it('NUL and lone surrogates in every string field, nested too, are 422 naming each field; nothing written', async () => {
    const before = await counts();
    for (const op of operations.filter((o) => o.jsonBody)) {
      for (const [what, bad] of [['NUL', NUL], ['lone surrogate', LONE_SURROGATE]]) {
        const { body, paths } = poisoned(op, bad);
        if (paths.length === 0) continue; // no string field (booleans only): the field-name case below covers it
        // JSON.stringify writes a lone surrogate as the escape \ud800, as an attacker would send it.
        const res = await send(op, JSON.stringify(body), 'application/json');
        expectProblem(res, [op.method, op.path, what], 422);
        for (const path of paths) expect([op.path, what, path, res.body.errors?.[path]]).toEqual([op.path, what, path, expect.stringMatching(/NUL/)]);
      }
      const badKey = await send(op, '{"na\\u0000me": "x"}', 'application/json');
      expectProblem(badKey, [op.method, op.path, 'NUL in a field name'], 422);
    }
    // The form-encoded token endpoint answers RFC 6749 errors, never a 500.
    const form = allOperations.find((o) => o.template === '/oauth/token')!;
    for (const field of ['grant_type', 'client_id', 'client_secret', 'scope']) {
      const values: Record<string, string> = { grant_type: 'client_credentials', client_id: 'c', client_secret: 's', scope: 'flags:read', [field]: NUL };
      const res = await http(`${f.url}${form.template}`, {
        method: 'POST',
        body: new URLSearchParams(values).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect([field, res.status >= 400 && res.status < 500]).toEqual([field, true]);
    }
    expect(await counts()).toEqual(before);
  });

  it('control characters or a broken encoding in any path parameter are a 4xx problem, on every method; nothing written', async () => {
    const before = await counts();
    const withParams = allOperations.filter((o) => o.pathParams.length > 0);
    expect(withParams.length).toBeGreaterThanOrEqual(15);
    for (const op of withParams) {
      for (const param of op.pathParams) {
        for (const bad of ['%00', 'f1%00', '%01', '%7F', '%ED%A0%80', '%E0%A4%A']) {
          const res = await http(`${f.url}${fill(op.template, { [param]: bad })}`, {
            method: op.method,
            ...(op.hasBody ? { json: {} } : {}),
            headers: { authorization: `Bearer ${root.idToken}`, 'x-tenant-id': root.tenantId },
          });
          expectProblem(res, [op.method, op.template, param, bad], 400);
        }
      }
    }
    expect(await counts()).toEqual(before);
  });

  it('NUL or repetition in every query parameter is a 422 naming it; bracket nesting is never a 5xx', async () => {
    const withQuery = allOperations.filter((o) => o.queryParams.length > 0);
    expect(withQuery.length).toBeGreaterThanOrEqual(5);
    const get = async (op: AnyOperation, query: string) => {
      const url = `${f.url}${fill(op.template)}?${query}`;
      const init = { method: op.method, headers: { authorization: `Bearer ${root.idToken}`, 'x-tenant-id': root.tenantId } };
      if (!op.eventStream) return http(url, init);
      const res = await fetch(url, init);
      if (res.status === 200) {
        await res.body?.cancel();
        return { status: 200, headers: res.headers, body: undefined as any, text: '' };
      }
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: JSON.parse(text), text };
    };
    for (const op of withQuery) {
      for (const name of op.queryParams) {
        const res = await get(op, `${name}=a%00b`);
        expectProblem(res, [op.method, op.template, name, 'NUL'], 422);
        expect([op.template, name, res.body.errors?.[name]]).toEqual([op.template, name, expect.stringMatching(/NUL/)]);
        const repeated = await get(op, `${name}=1&${name}=2`);
        expectProblem(repeated, [op.method, op.template, name, 'repeated'], 422);
        // Express 5 parses no brackets: `name[a][a]...` is another, unknown parameter (422 where a
        // DTO declares the query, ignored by a handler reading one named parameter). 1,000 levels:
        // a 30 kB URL is refused by Node's HTTP parser itself (431, 16 kB of headers).
        const nested = await get(op, `${name}${'[a]'.repeat(1000)}=1`);
        if (nested.status >= 300) expectProblem(nested, [op.method, op.template, name, 'nested'], 422);
        else expect([op.template, name, nested.status]).toEqual([op.template, name, 200]);
      }
    }
  });

  it('a forged or tampered cursor is 400 on every list; the cursors the API issues still page', async () => {
    const auth = { token: root.idToken, tenant: root.tenantId };
    // Two of everything listed, so each list has a next page at limit=1.
    await f.call('POST', '/api/projects', { ...auth, json: { name: 'p2' } });
    await f.call('POST', '/api/flags', { ...auth, json: { key: 'f2', name: 'f', type: 'boolean', defaultValue: true } });
    await f.call('POST', '/api/oauth/clients', { ...auth, json: { name: 'c2', scopes: ['flags:read'] } });
    for (const key of ['s1', 's2']) await f.call('POST', '/api/segments', { ...auth, json: { key, name: key } });
    await f.call('POST', '/api/webhooks', { ...auth, json: { url: 'https://hooks.example.com/second', events: ['flag.created'] } });
    const invitee = await f.signUp();
    await f.addMember(root, root.tenantId, invitee.email, 'viewer', invitee);
    // The usage ledger has no API that writes it (the gateway does): two rows as the gateway writes them.
    await f.sql(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, completed_at)
       SELECT $1, 'ffc_bad_input', 'core', 'inhouse', 'fake-chat-1', 'chat.completions', 'succeeded', now() FROM generate_series(1, 2)`,
      [root.tenantId],
    );
    // Low-balance crossings too are written by the gateway's settlements only: two of them.
    await f.sql(`INSERT INTO low_balance_crossings (tenant_id, threshold, balance) SELECT $1, 100, 50 FROM generate_series(1, 2)`, [root.tenantId]);

    const cursor = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const uuid = '0b6e4b4e-8a43-4d6f-9a3e-2f1c4a5b6c7d';
    const forged = {
      'not base64 JSON': '!!!',
      'random bytes': Buffer.from([0xff, 0x00, 0x13]).toString('base64url'),
      'an object': cursor({ at: '2026-01-01T00:00:00.000Z', id: uuid }),
      'not a date': cursor(['yesterday', uuid]),
      'an impossible date': cursor(['2026-02-30T00:00:00.000Z', uuid]),
      'year zero': cursor(['0000-01-01T00:00:00.000Z', uuid]),
      'an expanded year': cursor(['+275760-09-13T00:00:00.000Z', uuid]),
      'a date without time': cursor(['2026-01-01', uuid]),
      'not an id': cursor(['2026-01-01T00:00:00.000Z', "x' OR 1=1 --"]),
      'NUL in the id': cursor(['2026-01-01T00:00:00.000Z', `${uuid}\u0000`]),
      'NUL in the date': cursor(['2026-01-01T00:00:00.000Z\u0000', uuid]),
      'three parts': cursor(['2026-01-01T00:00:00.000Z', uuid, 'x']),
      'numbers': cursor([1, 2]),
    };
    const lists = allOperations.filter((o) => o.method === 'GET' && o.queryParams.includes('cursor'));
    expect(lists.map((o) => o.template).sort()).toEqual([
      '/admin/users',
      '/api/billing/budgets',
      '/api/billing/low-balance-alert/crossings',
      '/api/flags',
      '/api/oauth/clients',
      '/api/projects',
      '/api/segments',
      '/api/tenants/{tenantId}/users',
      '/api/usage',
      '/api/webhooks',
      '/api/webhooks/{webhookId}/deliveries',
    ]);
    for (const op of lists) {
      for (const [what, c] of Object.entries(forged)) {
        const res = await f.call('GET', `${fill(op.template)}?cursor=${encodeURIComponent(c)}`, auth);
        expectProblem(res, [op.template, what], 400);
      }
      const first = await f.call('GET', `${fill(op.template)}?limit=1`, auth);
      const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      expect([op.template, first.status, typeof next]).toEqual([op.template, 200, 'string']);
      const second = await f.call('GET', next!, auth);
      expect([op.template, second.status, second.body.length]).toEqual([op.template, 200, 1]);
      expect(second.body[0]).not.toEqual(first.body[0]);
    }
  });

  it('targeting that could freeze the evaluator is 422 naming the field and saying why (regexes RE2 cannot run, over-long patterns, prerequisites too deep); nothing written', async () => {
    const auth = { token: root.idToken, tenant: root.tenantId };
    // A chain c0 -> c1 -> ... -> c10: c0 is 10 prerequisites deep, the most allowed.
    const on: Record<string, string> = {};
    for (let i = 10; i >= 0; i--) {
      const created = await f.call('POST', '/api/flags', { ...auth, json: { key: `chain-${i}`, name: 'c', type: 'boolean', defaultValue: false } });
      on[`chain-${i}`] = created.body.variations[0].id;
      if (i < 10) {
        const linked = await f.call('PATCH', `/api/flags/chain-${i}`, { ...auth, json: { prerequisites: [{ key: `chain-${i + 1}`, variationId: on[`chain-${i + 1}`] }] } });
        expect(linked.status).toBe(200);
      }
    }
    const before = await counts();
    const matching = (pattern: string) => ({ rules: [{ id: 'r', clauses: [{ attribute: 'email', op: 'matches', values: ['ok$', pattern] }], variationId: on['chain-0'] }] });
    const linear = 'regular expression cannot be evaluated in linear time (backreferences, lookahead, lookbehind and counted repetitions over 1000 are not supported)';
    const cases: Array<[string, unknown, Record<string, string>]> = [
      ['a backreference', matching('(\\w+)@\\1'), { 'rules[0].clauses[0].values[1]': linear }],
      ['a lookahead', matching('^(?!admin)'), { 'rules[0].clauses[0].values[1]': linear }],
      ['a lookbehind', matching('(?<=@)example'), { 'rules[0].clauses[0].values[1]': linear }],
      ['a counted repetition over 1000', matching('a{1001}'), { 'rules[0].clauses[0].values[1]': linear }],
      ['an over-long pattern', matching('x'.repeat(513)), { 'rules[0].clauses[0].values[1]': 'regular expression is longer than 512 characters' }],
      [
        'a prerequisite chain too deep',
        { prerequisites: [{ key: 'chain-0', variationId: on['chain-0'] }] },
        { prerequisites: 'its prerequisites lead through a chain of 11 prerequisites (at most 10 deep)' },
      ],
    ];
    for (const [name, json, errors] of cases) {
      // The regexes on chain-0 itself; the prerequisite from f1, which would sit on top of the chain.
      const res = await f.call('PATCH', 'prerequisites' in (json as object) ? '/api/flags/f1' : '/api/flags/chain-0', { ...auth, json });
      expect([name, res.status, res.headers.get('content-type'), res.body.errors]).toEqual([name, 422, expect.stringMatching(/problem\+json/), errors]);
    }
    // Below the chain: a new prerequisite of chain-10 would make chain-0, ten levels above, too deep.
    const deeper = await f.call('PATCH', '/api/flags/chain-10', { ...auth, json: { prerequisites: [{ key: 'f1', variationId: (await f.call('GET', '/api/flags/f1', auth)).body.variations[0].id }] } });
    expect([deeper.status, deeper.body.errors]).toEqual([
      422,
      { prerequisites: "flag 'chain-0' depends on this one, and its prerequisites would lead through a chain of 11 prerequisites (at most 10 deep)" },
    ]);
    expect(await counts()).toEqual(before);
  });

  it('null in every field of every body is a 4xx problem, never a 500; PATCH /api/projects/{id} all null is 422', async () => {
    const before = await counts();
    for (const op of operations.filter((o) => o.jsonBody && Object.keys(o.properties).length > 0)) {
      const body = Object.fromEntries(Object.keys(op.properties).map((k) => [k, null]));
      const res = await send(op, JSON.stringify(body), 'application/json');
      expectProblem(res, [op.method, op.path]);
    }
    const patch = await f.call('PATCH', `/api/projects/${params['id']}`, {
      token: root.idToken,
      tenant: root.tenantId,
      json: { name: null, description: null, color: null },
    });
    expectProblem(patch, ['PATCH /api/projects/{id}'], 422);
    expect(patch.body.errors).toEqual({ name: 'must not be null', description: 'must not be null', color: 'must not be null' });
    expect(await counts()).toEqual(before);
  });
});

/** Whether `value` is of the JSON Schema `schema`'s declared type (only what the wrong-types test sends). */
function ofSchemaType(schema: { type?: unknown } | undefined, value: unknown): boolean {
  switch (schema?.type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    default:
      return false;
  }
}
