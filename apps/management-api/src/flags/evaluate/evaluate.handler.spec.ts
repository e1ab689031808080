import 'reflect-metadata';
import { StrictValidationPipe } from '@flagship/problem-details';
import { EvaluateFlagDto } from '../flags.dto';
import { plainEvaluateBody } from './evaluate.handler';

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
];

const LEFT_TO_THE_PIPE = [
  '{"user":"x"}',
  '{"userId":42}',
  '{"userId":null}',
  '{"attributes":null}',
  '{"attributes":[1,2]}',
  '{"attributes":"NO"}',
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
