import 'reflect-metadata';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { CommonProblems, ProblemException } from '@flagship/problem-details';
import { type ErrorWriter, Exchange, JSON_TYPE } from './exchange';
import { declaredRoutes, jsonBody, type JsonBody, leanRoute, openApiOperation, route, routeProblems } from './lean-routes';

class GreetDto {
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(16) name?: string;
}

class GreetingDto {
  @ApiProperty() text: string;
}

/** What the routes below run on. */
interface Greeter {
  greet(projectId: string, who: string): string;
}

const GREET = route({
  method: 'POST',
  path: '/api/projects/:projectId/greetings/:greetingKey',
  auth: 'bearer',
  body: jsonBody({ dto: GreetDto }),
  handle: async (x, p, body: JsonBody<GreetDto>, g: Greeter) => {
    const dto = await body.validate();
    x.json(200, JSON.stringify({ text: `${g.greet(p['projectId']!, dto.name ?? 'you')} (${p['greetingKey']})` }));
  },
  problems: [404, 429],
  doc: {
    operationId: 'Greetings_greet',
    summary: 'Greet someone',
    tags: ['greetings'],
    headers: [{ name: 'X-Tenant-ID', description: 'the tenant' }],
    answer: { status: 200, description: 'the greeting', dto: GreetingDto },
  },
});

const FREE = route({
  method: 'POST',
  path: '/api/free',
  body: jsonBody<Record<string, unknown>>({ schema: { type: 'object', additionalProperties: true }, description: 'anything' }),
  handle: async (x, _p, body) => x.json(200, JSON.stringify(await body.validate())),
  doc: { operationId: 'Free_post', summary: 'Free-form', tags: ['free'], answer: { status: 201, description: 'made', dto: GreetingDto } },
});

const TEXT = route({ method: 'POST', path: '/v1/echo', handle: (x, _p, text: string) => x.json(200, JSON.stringify({ text })) });

/** A request and a response with only what Exchange touches: the answer is recorded, nothing is sent. */
function exchange(body = '', errors?: ErrorWriter): { x: Exchange; answer: () => { status: number; headers: OutgoingHttpHeaders; body: any } } {
  const req = { method: 'POST', url: '/api/projects/p1/greetings/g1', headers: {} } as unknown as IncomingMessage;
  const sent: { status: number; headers: OutgoingHttpHeaders; body: string } = { status: 0, headers: {}, body };
  const state = { headersSent: false, writableEnded: false };
  const res = {
    get headersSent() {
      return state.headersSent;
    },
    get writableEnded() {
      return state.writableEnded;
    },
    writeHead(status: number, headers: OutgoingHttpHeaders) {
      Object.assign(sent, { status, headers });
      state.headersSent = true;
    },
    end(text?: string) {
      sent.body = text ?? '';
      state.writableEnded = true;
    },
    destroy() {},
  } as unknown as ServerResponse;
  const x = new Exchange(req, res, '/test', { observe: () => undefined }, errors);
  return { x, answer: () => ({ status: sent.status, headers: sent.headers, body: sent.body === '' ? undefined : JSON.parse(sent.body) }) };
}

const greeter: Greeter = { greet: (projectId, who) => `hello ${who} from ${projectId}` };

describe('a route declared once: its OpenAPI operation', () => {
  it('has the headers, then the path parameters in order, the body, the answer and every problem it may answer', () => {
    const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
    const problem = (status: number) => expect.objectContaining({ content: { 'application/problem+json': { schema: ref(status === 422 ? 'ValidationProblem' : 'Problem') } } });
    expect(openApiOperation(GREET)).toEqual({
      operationId: 'Greetings_greet',
      summary: 'Greet someone',
      tags: ['greetings'],
      security: [{ bearer: [] }],
      parameters: [
        { name: 'X-Tenant-ID', in: 'header', description: 'the tenant', required: false, schema: { type: 'string' } },
        { name: 'projectId', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'greetingKey', in: 'path', required: true, schema: { type: 'string' } },
      ],
      requestBody: { required: true, content: { 'application/json': { schema: ref('GreetDto') } } },
      responses: {
        '200': { description: 'the greeting', content: { 'application/json': { schema: ref('GreetingDto') } } },
        ...Object.fromEntries([400, 401, 403, 404, 413, 415, 422, 429].map((s) => [String(s), problem(s)])),
      },
    });
    // In the order a document lists them: the success, then the problems by status.
    expect(Object.keys(openApiOperation(GREET)!.responses)).toEqual(['200', '400', '401', '403', '404', '413', '415', '422', '429']);
  });

  it('takes its problems from the auth, the body rule and the handler: a text body declares none, no auth no 401', () => {
    expect(routeProblems(GREET)).toEqual([400, 401, 403, 404, 413, 415, 422, 429]);
    expect(routeProblems(FREE)).toEqual([400, 413, 415, 422]);
    expect(routeProblems(TEXT)).toEqual([]);
  });

  it('describes a free-form body by its schema and description, and leaves an undocumented route out', () => {
    const free = openApiOperation(FREE)!;
    expect([free.security, free.parameters, free.requestBody]).toEqual([
      undefined,
      [],
      { required: true, description: 'anything', content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } } },
    ]);
    expect(Object.keys(free.responses)[0]).toBe('201');
    expect(openApiOperation(TEXT)).toBeUndefined();
  });

  it("gives the document its operations and the DTOs they name, each once, in the routes' order", () => {
    const declared = declaredRoutes([GREET, TEXT, FREE]);
    expect(declared.routes.map((r) => [r.method, r.path, r.operation.operationId])).toEqual([
      ['POST', '/api/projects/:projectId/greetings/:greetingKey', 'Greetings_greet'],
      ['POST', '/api/free', 'Free_post'],
    ]);
    expect(declared.models).toEqual([GreetDto, GreetingDto]);
  });
});

describe('a route declared once: answering', () => {
  beforeAll(() => Logger.overrideLogger(false)); // the deliberate failures below are logged
  afterAll(() => Logger.overrideLogger(['error', 'warn', 'log']));

  it('hands the handler its named path parameters and the validated body', async () => {
    const { x, answer } = exchange();
    await leanRoute(GREET, greeter).run(x, 'g1', '{"name":"Ada"}', ['p1', 'g1']);
    expect(answer()).toMatchObject({ status: 200, body: { text: 'hello Ada from p1 (g1)' } });
  });

  it('hands a text route its body as it came', async () => {
    const { x, answer } = exchange();
    await leanRoute(TEXT, undefined).run(x, '', '{not json', []);
    expect(answer().body).toEqual({ text: '{not json' });
  });

  it.each([
    ['malformed JSON', '{"name":', 400, '/problems/malformed-json', undefined],
    ['a scalar', '"Ada"', 400, '/problems/malformed-json', undefined],
    ['an unknown field', '{"nom":"Ada"}', 422, '/problems/validation-failed', { nom: 'is not an allowed field' }],
    ['NUL in a field', '{"name":"A\\u0000"}', 422, '/problems/validation-failed', { name: expect.stringMatching(/NUL/) }],
    ['no body', '', 422, '/problems/validation-failed', { body: 'must be a JSON object' }],
  ])('refuses %s by the body rules, as problem+json', async (_what, text, status, type, errors) => {
    const { x, answer } = exchange();
    await leanRoute(GREET, greeter).run(x, 'g1', text, ['p1', 'g1']);
    const got = answer();
    expect([got.status, got.headers['content-type'], got.body.type, got.body.errors]).toEqual([status, 'application/problem+json', type, errors]);
  });

  it("answers a problem the handler throws with its headers, after the headers it added (a rate limit's)", async () => {
    const limited = route({
      method: 'POST',
      path: '/limited',
      handle: (x) => {
        x.addHeaders({ 'RateLimit-Remaining': '0' });
        throw new ProblemException(CommonProblems['rate-limited'], 'Slow down.', {}, { 'Retry-After': '7' });
      },
    });
    const { x, answer } = exchange();
    await leanRoute(limited, undefined).run(x, '', '', []);
    const got = answer();
    expect([got.status, got.body.type, got.body.detail, got.headers['RateLimit-Remaining'], got.headers['Retry-After']]).toEqual([429, '/problems/rate-limited', 'Slow down.', '0', '7']);
  });

  it('answers an unexpected failure, thrown or rejected, with a 500 that tells nothing of it', async () => {
    for (const handle of [() => Promise.reject(new Error('secret detail')), () => { throw new Error('secret detail'); }]) {
      const { x, answer } = exchange();
      await leanRoute(route({ method: 'GET', path: '/boom', handle }), undefined).run(x, '', '', []);
      const got = answer();
      expect([got.status, got.body.type, JSON.stringify(got.body).includes('secret')]).toEqual([500, '/problems/internal-error', false]);
    }
  });

  it("writes refusals in the app's own error format when it has one (the gateway's)", async () => {
    const openAi: ErrorWriter = (x, error, headers) => x.send(error.status, JSON_TYPE, headers, JSON.stringify({ error: { code: error.code, message: error.message } }));
    const { x, answer } = exchange('', openAi);
    await leanRoute(GREET, greeter).run(x, 'g1', '{"name":', ['p1', 'g1']);
    expect(answer()).toMatchObject({ status: 400, body: { error: { code: 'malformed-json', message: 'The request body is not valid JSON.' } } });
  });
});
