import { acceptsMediaType, BODY_LIMIT_BYTES, BodyRefusals, declaresBody, mediaTypeOf, parseJsonBody } from './body-rules';
import { MAX_JSON_DEPTH } from './json-depth';
import { ProblemException } from './problem.exception';

/** The problem a parse refuses with, as [status, slug, detail]. */
function refusal(text: string): [number, string, string] | 'parsed' {
  try {
    parseJsonBody(text);
    return 'parsed';
  } catch (err) {
    if (!(err instanceof ProblemException)) throw err;
    return [err.problem.status, err.problem.slug, err.detail];
  }
}

const nested = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('body rules', () => {
  it('parse a JSON body as body-parser (strict) does: no body is undefined, objects and arrays are taken', () => {
    expect(parseJsonBody('')).toBeUndefined();
    expect(parseJsonBody(' {"a":[1,{"b":null}]}')).toEqual({ a: [1, { b: null }] });
    expect(parseJsonBody('\n[1,2]')).toEqual([1, 2]);
    // JSON.parse keeps "__proto__" as an own key; the validation pipe decides what to do with it.
    expect(Object.keys(parseJsonBody('{"__proto__":{"x":1}}') as object)).toEqual(['__proto__']);
  });

  it.each([
    ['a string', '"text"'],
    ['a number', '42'],
    ['null', 'null'],
    ['a truncated object', '{"userId":'],
    ['trailing garbage', '{"a":1} x'],
  ])('refuse %s as malformed-json (400)', (_what, text) => {
    expect(refusal(text)).toEqual([400, 'malformed-json', 'The request body is not valid JSON.']);
  });

  it(`refuse JSON nested deeper than ${MAX_JSON_DEPTH} levels before parsing it, brackets in strings not counted`, () => {
    expect(refusal(nested(MAX_JSON_DEPTH))).toBe('parsed');
    expect(refusal(nested(MAX_JSON_DEPTH + 1))).toEqual([400, 'json-too-deep', `The request body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels.`]);
    // Too deep and not even JSON: the depth is what is said (checked first, on the raw text).
    expect(refusal(`${'{"a":'.repeat(10_000)}`)[1]).toBe('json-too-deep');
    expect(refusal(JSON.stringify({ s: '['.repeat(10_000) }))).toBe('parsed');
  });

  it('take application/json and every application/*+json, whatever the case and parameters', () => {
    expect(['application/json', 'Application/JSON; charset=utf-8', 'application/problem+json', 'application/vnd.ofrep+json ;x=1'].map((t) => acceptsMediaType(mediaTypeOf(t)))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['application/jsonx', 'text/json', 'text/plain', '', undefined].map((t) => acceptsMediaType(mediaTypeOf(t)))).toEqual([false, false, false, false, false]);
    // A route that consumes forms takes only what it names.
    expect(acceptsMediaType('application/x-www-form-urlencoded', ['application/x-www-form-urlencoded'])).toBe(true);
    expect(acceptsMediaType('application/problem+json', ['application/x-www-form-urlencoded'])).toBe(false);
  });

  it('see a body where a length other than 0 or a chunked transfer is declared', () => {
    expect([{}, { 'content-length': '0' }, { 'content-length': '2' }, { 'transfer-encoding': 'chunked' }].map((h) => declaresBody(h))).toEqual([false, false, true, true]);
  });

  it('word each refusal once, with its status, problem type and the headers that say what is accepted', () => {
    const cases = {
      tooLarge: BodyRefusals.tooLarge(BODY_LIMIT_BYTES),
      mediaType: BodyRefusals.mediaType('text/plain'),
      noMediaType: BodyRefusals.mediaType('', ['application/json'], ' (UTF-8)'),
      encoding: BodyRefusals.encoding('zstd'),
      unreadable: BodyRefusals.unreadable(),
    };
    const seen = Object.fromEntries(Object.entries(cases).map(([k, p]) => [k, [p.problem.status, p.problem.slug, p.detail, p.headers]]));
    expect(seen).toEqual({
      tooLarge: [413, 'payload-too-large', 'The request body exceeds the limit of 1048576 bytes.', {}],
      mediaType: [415, 'unsupported-media-type', 'Content-Type text/plain is not accepted here; send application/json.', { Accept: 'application/json' }],
      noMediaType: [415, 'unsupported-media-type', 'Content-Type (none) is not accepted here; send application/json (UTF-8).', { Accept: 'application/json' }],
      encoding: [
        415,
        'unsupported-media-type',
        'Content-Encoding zstd is not accepted here; send the body uncompressed or as gzip, deflate or br.',
        { 'Accept-Encoding': 'gzip, deflate, br' },
      ],
      unreadable: [400, 'bad-request', 'The request body could not be read: it is not valid data of its Content-Encoding.', {}],
    });
  });
});
