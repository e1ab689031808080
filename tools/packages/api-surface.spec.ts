/**
 * The published packages' version against the API they speak. libs/sdk/api-surface.json records the
 * OpenAPI surface a version was made against; a breaking change to the current document fails here
 * until both packages' version leaves the caret range of the recorded one. Additions pass. Re-record
 * for a release with `UPDATE_API_SURFACE=1 npx jest tools/packages/api-surface.spec.ts` (it refuses
 * while a breaking change has no major version). tools/packages/release.mjs runs it with RELEASE_CHECK=1,
 * which also refuses a record that is not the released version's, of the current document.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SDK_VERSION } from '@flagship/sdk';
import { allowsBreakingChanges, type ApiSurface, apiSurface, breakingChanges, parseVersion, type RecordedSurface } from './api-surface';

const ROOT = join(__dirname, '../..');
const RECORD = join(ROOT, 'libs/sdk/api-surface.json');
const DOCUMENT = join(ROOT, 'openapi/management-api.openapi.json');
const MANIFESTS = ['libs/sdk/package.json', 'libs/sdk/openfeature-provider/package.json'];

/** An OpenAPI document, mutated freely below. */
type Document = any;
const readDocument = (): Document => JSON.parse(readFileSync(DOCUMENT, 'utf8'));
const versions = MANIFESTS.map((file) => (JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as { version: string }).version);

/** What stops `version` from shipping against `current`, given the surface recorded for an earlier version. */
function versionProblems(recorded: RecordedSurface, current: ApiSurface, version: string): string[] {
  const breaks = breakingChanges(recorded, current);
  if (breaks.length === 0 || allowsBreakingChanges(recorded.version, version)) return [];
  return [`the OpenAPI document breaks what ${recorded.version} was made against, and ${version} is not a major version after it:`, ...breaks.map((b) => `  ${b}`)];
}

describe('the packages’ version', () => {
  it('is one version in both manifests and in SDK_VERSION (the User-Agent)', () => {
    expect(versions).toEqual([SDK_VERSION, SDK_VERSION]);
    expect(() => parseVersion(SDK_VERSION)).not.toThrow();
  });

  it('speaks the current OpenAPI document: no breaking change since the recorded surface without a major version', () => {
    const recorded = JSON.parse(readFileSync(RECORD, 'utf8')) as RecordedSurface;
    const current = apiSurface(readDocument());
    const problems = versionProblems(recorded, current, SDK_VERSION);
    if (problems.length > 0) throw new Error(`${problems.join('\n')}\nBump the version in ${MANIFESTS.join(', ')} and SDK_VERSION, then re-record (UPDATE_API_SURFACE=1).`);
    const [r0, r1, r2] = parseVersion(recorded.version);
    const [v0, v1, v2] = parseVersion(SDK_VERSION);
    expect(v0 * 1e12 + v1 * 1e6 + v2).toBeGreaterThanOrEqual(r0 * 1e12 + r1 * 1e6 + r2);
    if (process.env['RELEASE_CHECK'] === '1') {
      // tools/packages/release.mjs: what is published records the surface of its own version, of this document.
      expect({ version: recorded.version, surfaceIsCurrent: JSON.stringify({ ...recorded, version: undefined }) === JSON.stringify({ ...current, version: undefined }) }).toEqual({ version: SDK_VERSION, surfaceIsCurrent: true });
    }
    if (process.env['UPDATE_API_SURFACE'] === '1') {
      const record: RecordedSurface = { version: SDK_VERSION, ...current };
      writeFileSync(RECORD, `${JSON.stringify(record, null, 1)}\n`);
    }
  });
});

describe('breakingChanges, on mutated copies of the current document', () => {
  const base = readDocument();
  const surface = apiSurface(base);
  const changed = (mutate: (doc: Document) => void): string[] => {
    const doc = structuredClone(base);
    mutate(doc);
    return breakingChanges(surface, apiSurface(doc));
  };
  const flagBody = (doc: Document) => doc.components.schemas.CreateFlagDto;

  it('finds nothing between the document and itself, and records every operation', () => {
    expect(breakingChanges(surface, surface)).toEqual([]);
    expect(Object.keys(surface.operations)).toEqual(expect.arrayContaining(['POST /api/flags', 'GET /api/flags/{flagKey}', 'GET /api/flag-stream']));
  });

  it.each<[string, (doc: Document) => void, string]>([
    ['a removed path', (d) => delete d.paths['/api/flags/{flagKey}/variations'], 'GET /api/flags/{flagKey}/variations: operation removed'],
    ['a removed method', (d) => delete d.paths['/api/flags/{flagKey}'].patch, 'PATCH /api/flags/{flagKey}: operation removed'],
    ['a removed response field', (d) => delete d.components.schemas.FlagDto.properties.version, 'GET /api/flags/{flagKey} 200.version: response field removed'],
    ['a response field no longer required', (d) => (d.components.schemas.FlagDto.required = d.components.schemas.FlagDto.required.filter((f: string) => f !== 'key')), 'GET /api/flags/{flagKey} 200.key: no longer always present'],
    ['a response field whose type changed', (d) => (d.components.schemas.FlagDto.properties.enabled = { type: 'string' }), 'GET /api/flags/{flagKey} 200.enabled: type changed from boolean to string'],
    [
      'a new required request field',
      (d) => {
        flagBody(d).properties.owner = { type: 'string' };
        flagBody(d).required.push('owner');
      },
      'POST /api/flags requestBody.owner: new required request field',
    ],
    ['an optional request field made required', (d) => flagBody(d).required.push('description'), 'POST /api/flags requestBody.description: became required'],
    ['a request field whose type changed', (d) => (flagBody(d).properties.key = { type: 'number' }), 'POST /api/flags requestBody.key: type changed from string to number'],
    ['a request enum value taken away', (d) => (flagBody(d).properties.type.enum = ['boolean', 'string', 'number']), 'POST /api/flags requestBody.type: no longer accepts "json"'],
    ['a removed request field', (d) => delete flagBody(d).properties.tags, 'POST /api/flags requestBody.tags: request field removed'],
    [
      'a new required query parameter',
      (d) => d.paths['/api/flags'].get.parameters.push({ name: 'owner', in: 'query', required: true, schema: { type: 'string' } }),
      'GET /api/flags query:owner: new required parameter',
    ],
    ['a removed success response', (d) => ((d.paths['/api/flags'].post.responses['200'] = d.paths['/api/flags'].post.responses['201']), delete d.paths['/api/flags'].post.responses['201']), 'POST /api/flags 201: success response removed'],
  ])('fails on %s', (_what, mutate, expected) => {
    expect(changed(mutate)).toContain(expected);
  });

  it.each<[string, (doc: Document) => void]>([
    ['a new operation', (d) => (d.paths['/api/owners'] = { get: { responses: { '200': { description: '' } } } })],
    ['a new optional request field', (d) => (flagBody(d).properties.owner = { type: 'string' })],
    ['a new response field', (d) => (d.components.schemas.FlagDto.properties.owner = { type: 'string' })],
    ['a new optional query parameter', (d) => d.paths['/api/flags'].get.parameters.push({ name: 'owner', in: 'query', required: false, schema: { type: 'string' } })],
    ['a request enum value added', (d) => flagBody(d).properties.type.enum.push('date')],
    ['new descriptions and examples', (d) => (flagBody(d).properties.key.description = 'another text')],
  ])('lets %s pass', (_what, mutate) => {
    expect(changed(mutate)).toEqual([]);
  });

  it('a breaking document fails the version check at the recorded version and a minor after it, and passes at a major', () => {
    const doc = structuredClone(base);
    delete doc.components.schemas.FlagDto.properties.version;
    const current = apiSurface(doc);
    const at = (recordedVersion: string, version: string) => versionProblems({ version: recordedVersion, ...surface }, current, version);

    expect(at('1.4.0', '1.4.0')).toContain('  GET /api/flags/{flagKey} 200.version: response field removed');
    expect(at('1.4.0', '1.5.0')).not.toEqual([]);
    expect(at('1.4.0', '2.0.0')).toEqual([]);
    // Below 1.0.0 npm's caret range ends at the next minor (^0.1.0 excludes 0.2.0): that is the major bump.
    expect(at('0.1.0', '0.1.1')).not.toEqual([]);
    expect(at('0.1.0', '0.2.0')).toEqual([]);
    expect(versionProblems({ version: '1.4.0', ...surface }, surface, '1.4.0')).toEqual([]);
  });
});
