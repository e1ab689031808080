import 'reflect-metadata';
import { StrictValidationPipe } from '@flagship/problem-details';
import { EvaluateFlagDto } from '../flags.dto';
import { problemOf } from '../../testing/problem-of';
import { contextOfEvaluateBody, plainEvaluateBody, refuseMalformedContext } from './evaluate.handler';

const pipe = new StrictValidationPipe();
const viaPipe = (body: unknown): Promise<unknown> => pipe.transform(body, { type: 'body', metatype: EvaluateFlagDto, data: undefined });

/** Bodies as JSON text, parsed as the route parses them (JSON.parse keeps "__proto__" as an own key). */
const TAKEN = [
  '{}',
  '{"userId":"user-42","attributes":{"country":"NO","email":"u@example.com"}}',
  '{"userId":"","environment":"staging"}',
  '{"attributes":{"nested":{"a":[1,"two",null,true,{"b":2}]},"n":1.5,"none":null}}',
  `{"userId":"${'x'.repeat(512)}","environment":"${'e'.repeat(63)}"}`,
  '{"userId":"😀 emoji pairs are fine"}',
  '{"context":{"kind":"multi","user":{"key":"u"},"organization":{"key":"acme","plan":"pro"}}}',
];

const LEFT_TO_THE_PIPE = [
  '{"user":"x"}',
  '{"userId":42}',
  '{"userId":null}',
  '{"attributes":null}',
  '{"attributes":[1,2]}',
  '{"attributes":"NO"}',
  '{"context":[1]}',
  '{"context":null}',
  '{"environment":{"a":1}}',
  `{"userId":"${'x'.repeat(513)}"}`,
  `{"environment":"${'e'.repeat(64)}"}`,
  '{"userId":"nul \\u0000 inside"}',
  '{"attributes":{"lone":"\\ud800"}}',
  '{"attributes":{"__proto__":{"admin":true}}}',
  '{"attributes":{"deep":{"constructor":1}}}',
  '{"__proto__":{"x":1}}',
  '[]',
  '"text"',
];

describe('plainEvaluateBody: the evaluate body without the validation pipe, only where the pipe would take it as it is', () => {
  it.each(TAKEN)('takes %s exactly as the pipe hands it over', async (text) => {
    const fast = plainEvaluateBody(JSON.parse(text));
    expect(fast).toBeDefined();
    const piped = await viaPipe(JSON.parse(text));
    expect({ ...(fast as object) }).toEqual({ ...(piped as object) });
  });

  it.each(LEFT_TO_THE_PIPE)('leaves %s to the pipe', (text) => {
    expect(plainEvaluateBody(JSON.parse(text))).toBeUndefined();
  });

  it('leaves to the pipe every body it refuses or changes (the cases above)', async () => {
    for (const text of LEFT_TO_THE_PIPE) {
      const piped = await viaPipe(JSON.parse(text)).then(
        (v) => JSON.stringify({ ...(v as object) }),
        () => 'refused',
      );
      // Either refused, or changed by it (keys stripped): never what the body said as it is.
      expect([text, piped === 'refused' || piped !== JSON.stringify(JSON.parse(text))]).toEqual([text, true]);
    }
  });
});

describe('contextOfEvaluateBody: the context the evaluate body makes', () => {
  const refusal = (dto: EvaluateFlagDto) => problemOf(Promise.resolve().then(() => contextOfEvaluateBody(dto)));

  it('makes userId and attributes a user, whatever attribute kind is sent (the seed body)', () => {
    expect(contextOfEvaluateBody({ userId: 'u-1', attributes: { country: 'NO' } })).toEqual({ kind: 'user', key: 'u-1', userId: 'u-1', country: 'NO' });
    expect(contextOfEvaluateBody({ userId: 'u-1', attributes: { kind: 'organization', plan: 'pro' } })).toEqual({ kind: 'user', key: 'u-1', userId: 'u-1', plan: 'pro' });
    // No key is still the seed's ERROR / USER_NOT_SPECIFIED at evaluation, not a refusal.
    expect(contextOfEvaluateBody({ attributes: { kind: 'multi' } })).toEqual({ kind: 'user' });
  });

  it('takes context as a LaunchDarkly context, single or multi-kind, as it is', () => {
    const multi = { kind: 'multi', user: { key: 'u-1' }, organization: { key: 'acme', plan: 'pro' } };
    expect(contextOfEvaluateBody({ context: multi })).toBe(multi);
    expect(contextOfEvaluateBody({ context: { kind: 'device', key: 'd-1' } })).toEqual({ kind: 'device', key: 'd-1' });
  });

  it.each([
    [{ kind: 'multi', user: { key: 'u' }, organization: { name: 'Acme' } }, 'context.organization.key'],
    [{ kind: 'multi', multi: { key: 'x' } }, 'context.multi'],
    [{ kind: 'multi', 'bad kind': { key: 'x' } }, 'context.bad kind'],
    [{ kind: 'kind', key: 'x' }, 'context.kind'],
    [{ kind: 'organization' }, 'context.key'],
    [{ kind: 'multi' }, 'context'],
  ])('refuses %j with a 400 invalid-context naming %s', async (context, field) => {
    const problem = await refusal({ context });
    expect([problem.problem.status, problem.problem.slug, Object.keys(problem.extensions['errors'] as object)]).toEqual([400, 'invalid-context', [field]]);
  });

  it('refuses context beside userId or attributes (which would one mean?)', async () => {
    expect((await refusal({ userId: 'u', context: { key: 'u' } })).extensions['errors']).toEqual({ context: 'send either context or userId and attributes, not both' });
    expect((await refusal({ attributes: {}, context: { key: 'u' } })).problem.status).toBe(400);
  });
});

describe('refuseMalformedContext: the project route, whose body is the context', () => {
  const refused = (context: Record<string, unknown>) =>
    problemOf(Promise.resolve().then(() => refuseMalformedContext(context as never))).then((p) => [p.problem.status, p.extensions['errors']]);

  it('passes a valid context, and a seed context without a key (evaluated to USER_NOT_SPECIFIED)', () => {
    for (const ok of [{ key: 'u' }, { targetingKey: 'u' }, { kind: 'multi', user: { key: 'u' }, org: { key: 'o' } }, {}, { country: 'NO' }]) {
      expect(() => refuseMalformedContext(ok as never)).not.toThrow();
    }
  });

  it('refuses a malformed kind or multi-kind context, naming the field', async () => {
    expect(await refused({ kind: 'multi', user: { key: 'u' }, organization: {} })).toEqual([400, { 'organization.key': 'must be a non-empty string (the context key)' }]);
    expect(await refused({ kind: 'organization' })).toEqual([400, { key: 'must be a non-empty string (the context key)' }]);
    expect(await refused({ kind: 'not ok', key: 'x' })).toEqual([400, { kind: expect.any(String) }]);
  });
});
