import { type FlagDefinition, MAX_PREREQUISITE_DEPTH, type Variation } from '@flagship/flag-evaluation';
import type { MeasuredDefinition } from '@flagship/persistence';
import {
  etagMatches,
  flagProblems,
  globalsChange,
  importedRows,
  importProblems,
  importRequestProblems,
  inUse,
  newFlagProblems,
  newFlagsProblems,
  newFlagVariations,
  sizeProblems,
  staleWrite,
  variationsChange,
} from './flag-rules';
import type { FlagEntity, FlagEnvironmentEntity } from './flag.entity';
import { definitionOf } from './flag.mapper';
import type { FlagRow } from './flags.repository';
import type { ImportedFlag } from './launchdarkly-import';

const AT = new Date('2026-01-01T00:00:00Z');
const ON: Variation = { id: 'on', name: 'on', value: true, description: '', weight: 0 };
const OFF: Variation = { id: 'off', name: 'off', value: false, description: '', weight: 0 };

const flagOf = (key: string, more: Partial<FlagEntity> = {}): FlagEntity => ({
  tenantId: 't',
  id: `id-${key}`,
  key,
  projectId: null,
  name: key,
  type: 'boolean',
  defaultValue: false,
  description: '',
  tags: [],
  variations: [ON, OFF],
  clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false },
  version: 1,
  createdAt: AT,
  updatedAt: AT,
  ...more,
});
const envOf = (key: string, environmentKey = 'production', more: Partial<FlagEnvironmentEntity> = {}): FlagEnvironmentEntity => ({
  tenantId: 't',
  flagId: `id-${key}`,
  environmentKey,
  enabled: true,
  offValue: null,
  targets: [],
  rules: [],
  prerequisites: [],
  salt: null,
  version: 1,
  updatedAt: AT,
  ...more,
});
const rowOf = (key: string, flag: Partial<FlagEntity> = {}, env: Partial<FlagEnvironmentEntity> = {}): FlagRow => ({ flag: flagOf(key, flag), env: envOf(key, 'production', env) });
const defOf = (key: string, prerequisites: string[] = []): FlagDefinition => definitionOf(flagOf(key), envOf(key, 'production', { prerequisites: prerequisites.map((k) => ({ key: k, variationId: 'on' })) }));

describe('flag rules', () => {
  describe('new flags', () => {
    it('reserve the export path’s key and require a default and variations of the flag’s type', () => {
      expect(newFlagProblems({ key: 'export', type: 'boolean', defaultValue: true }, [], 'flag_variations')).toEqual({ key: "export is reserved by the API's paths" });
      expect(newFlagProblems({ key: 'k', type: 'string' }, [], 'flag_variations')).toEqual({ defaultValue: 'is required' });
      expect(newFlagProblems({ key: 'k', type: 'json', defaultValue: 3 }, [{ value: {} }, { value: 'x' }], 'variations')).toEqual({
        defaultValue: 'must be a JSON object or array',
        'variations[1].value': 'must be a JSON object or array',
      });
      expect(newFlagProblems({ key: 'k', type: 'number', defaultValue: 1.5 }, [{ value: 0 }], 'flag_variations')).toEqual({});
    });

    it('get the variations sent, else true and false for a boolean, else one holding the default', () => {
      let n = 0;
      const id = () => `v${++n}`;
      expect(newFlagVariations({ type: 'boolean', defaultValue: true }, undefined, id).map((v) => [v.id, v.name, v.value])).toEqual([
        ['v1', 'true', true],
        ['v2', 'false', false],
      ]);
      expect(newFlagVariations({ type: 'string', defaultValue: 'hi' }, [], id)).toEqual([{ id: 'v3', name: 'default', value: 'hi', description: '', weight: 0 }]);
      expect(newFlagVariations({ type: 'number', defaultValue: 1 }, [{ name: 'one', value: 1, weight: 2 }], id)).toEqual([{ id: 'v4', name: 'one', value: 1, description: '', weight: 2 }]);
    });
  });

  describe('If-Match', () => {
    it('matches *, any listed strong tag, and a weak tag by its value', () => {
      expect(etagMatches('*', '"1.1"')).toBe(true);
      expect(etagMatches(' "0.9" , "1.1"', '"1.1"')).toBe(true);
      expect(etagMatches('W/"1.1"', '"1.1"')).toBe(true);
      expect(etagMatches('"1.2"', '"1.1"')).toBe(false);
      expect(etagMatches('1.1', '"1.1"')).toBe(false);
    });

    it('a stale one is 412 flag-changed naming the current version; none is no precondition', () => {
      const row = rowOf('f', { version: 3 }, { version: 7 });
      expect(staleWrite(undefined, row)).toBeUndefined();
      expect(staleWrite('"3.7"', row)).toBeUndefined();
      const p = staleWrite('"3.6"', row)!;
      expect([p.problem.status, p.problem.slug, p.extensions]).toEqual([412, 'flag-changed', { currentVersion: '"3.7"' }]);
    });
  });

  describe('a flag as a write leaves it', () => {
    it('is valid in its environment and, when its variations change, in every other one', () => {
      const flag = flagOf('f', { variations: [OFF] });
      const staging = envOf('f', 'staging', { targets: [{ variationId: 'on', values: ['alice'] }] });
      expect(flagProblems(flag, envOf('f'), 'production', [], undefined)).toEqual({});
      const errors = flagProblems(flag, envOf('f'), 'production', [], [envOf('f'), staging]);
      expect(Object.keys(errors)).toEqual([expect.stringMatching(/^environments\.staging\.targets\[0\]\.variationId/)]);
      expect(flagProblems(flagOf('f', { defaultValue: 'no' }), envOf('f'), 'production', [])).toMatchObject({ defaultValue: expect.stringMatching(/^must be a boolean/) });
    });

    it('refuses a field the model does not have inside targets, rules and clauses, by path; honours a target’s contextKind (CONTRACT.md section 4)', () => {
      const env = envOf('f', 'production', {
        targets: [{ variationId: 'on', values: ['acme'], contextKind: 'organization', bogusField: true } as never],
        rules: [{ id: 'r', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'], contextKind: 'organization', extra: 1 } as never], variationId: 'on' }],
      });
      expect(flagProblems(flagOf('f'), env, 'production', [])).toEqual({
        'targets[0].bogusField': 'is not an allowed field',
        'rules[0].clauses[0].extra': 'is not an allowed field',
      });
      const kinds = envOf('f', 'production', { targets: [{ variationId: 'on', values: ['acme'], contextKind: 'organization' }] });
      expect(flagProblems(flagOf('f'), kinds, 'production', [])).toEqual({});
      expect(flagProblems(flagOf('f'), envOf('f', 'production', { targets: [{ variationId: 'on', values: ['x'], contextKind: 'multi' }] }), 'production', [])).toEqual({
        'targets[0].contextKind': "must be a context kind (letters, digits, '.', '_' and '-'; not 'kind' or 'multi'), or absent for 'user'",
      });
    });

    it('resolves prerequisites against the environment’s flags, and bounds the chains of the flags above it when they change', () => {
      const missing = flagProblems(flagOf('f'), envOf('f', 'production', { prerequisites: [{ key: 'ghost', variationId: 'on' }] }), 'production', []);
      expect(Object.keys(missing)).toEqual([expect.stringMatching(/^prerequisites\[0\]/)]);
      // c1 -> c0, ..., cN -> c(N-1): exactly as deep as allowed above c0.
      const chain = Array.from({ length: MAX_PREREQUISITE_DEPTH + 1 }, (_, i) => defOf(`c${i}`, i > 0 ? [`c${i - 1}`] : []));
      const leaf = defOf('leaf');
      const deepened = flagProblems(flagOf('c0'), envOf('c0', 'production', { prerequisites: [{ key: 'leaf', variationId: 'on' }] }), 'production', [...chain, leaf]);
      expect(deepened).toEqual({ prerequisites: expect.stringMatching(new RegExp(`^flag 'c${MAX_PREREQUISITE_DEPTH}' depends on this one, and its prerequisites would lead through a chain`)) });
      // The same prerequisites as before: nothing above changes, so nothing above is checked.
      const unchanged = chain.map((d) => (d.key === 'c0' ? defOf('c0', ['leaf']) : d));
      expect(flagProblems(flagOf('c0'), envOf('c0', 'production', { prerequisites: [{ key: 'leaf', variationId: 'on' }] }), 'production', [...unchanged, leaf])).toEqual({});
    });

    it('new flags written together are validated together, each keyed by its key', () => {
      const defs = new Map([
        ['a', defOf('a')],
        ['b', defOf('b', ['a'])],
        ['c', defOf('c', ['nobody'])],
      ]);
      expect(Object.keys(newFlagsProblems(defs, ['a', 'b', 'c']))).toEqual([expect.stringMatching(/^c\.prerequisites\[0\]/)]);
      expect(newFlagsProblems(defs, ['a', 'b'])).toEqual({});
    });
  });

  it('a flag named as a prerequisite is in use: 409 naming the flags that need it', () => {
    expect(inUse('base', [])).toBeUndefined();
    const p = inUse('base', ['a', 'b'])!;
    expect([p.problem.status, p.problem.slug, p.extensions, p.detail]).toEqual([409, 'flag-in-use', { dependents: ['a', 'b'] }, 'Flags a, b name base as a prerequisite; remove that first.']);
  });

  it('size: only a definition a write grew past the limit is refused, at the field named', () => {
    const d = (key: string, environment: string, before: number, bytes: number): MeasuredDefinition => ({ flagId: key, key, environment, before, bytes });
    expect(sizeProblems([d('a', 'production', 0, 100), d('b', 'staging', 900, 800)], 500, () => 'x')).toBeUndefined();
    expect(sizeProblems([d('a', 'production', 0, 600), d('a', 'staging', 0, 700)], 500, (m) => `flags.${m.key}`)).toEqual({
      'flags.a': "the flag's definition would take 700 bytes in production, staging; one environment's definition of a flag may take at most 500 bytes",
    });
  });

  describe('the import', () => {
    const imported = (key: string, more: Partial<ImportedFlag> = {}): ImportedFlag => ({
      key,
      type: 'boolean',
      variations: [ON, OFF],
      defaultValue: false,
      enabled: true,
      offValue: null,
      targets: [],
      rules: [],
      prerequisites: [],
      salt: `${key}-salt`,
      ...more,
    });

    it('refuses reserved keys beside the parser’s own problems', () => {
      const parsed = { flags: new Map([['export', {}]]), segments: new Map(), skipped: [], errors: { 'flags.x.variations': 'must be an array of values' } };
      expect(importRequestProblems(parsed)).toEqual({ 'flags.x.variations': 'must be an array of values', 'flags.export.key': "export is reserved by the API's paths" });
      expect(parsed.errors).toEqual({ 'flags.x.variations': 'must be an array of values' });
    });

    it('replaces variations and targeting of an existing flag and keeps its availability unless the import names one', () => {
      const before = rowOf('kept', { clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false }, version: 4 }, { environmentKey: 'staging', version: 9 });
      const rows = importedRows([imported('kept', { variations: [ON] }), imported('new', { clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: true } })], new Map([['kept', before]]), 'staging');
      expect(rows.get('kept')).toMatchObject({ flag: { id: 'id-kept', version: 4, variations: [ON], clientSideAvailability: { usingEnvironmentId: true } }, env: { environmentKey: 'staging', salt: 'kept-salt', version: 9 } });
      expect(rows.get('new')).toMatchObject({ flag: { key: 'new', version: 0, clientSideAvailability: { usingMobileKey: true } }, env: { environmentKey: 'staging', version: 0 } });
      expect(variationsChange(before, imported('kept'))).toBe(false);
      expect(variationsChange(before, imported('kept', { variations: [ON] }))).toBe(true);
      expect(variationsChange(undefined, imported('new'))).toBe(false);
      expect(globalsChange(before, imported('kept', { variations: [ON] }), rows.get('kept')!.flag)).toBe(true);
      expect(globalsChange(before, imported('kept'), { ...before.flag, clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false } })).toBe(true);
      expect(globalsChange(before, imported('kept'), before.flag)).toBe(false);
      expect(globalsChange(undefined, imported('new'), rows.get('new')!.flag)).toBe(false);
    });

    it('validates in LaunchDarkly’s terms (the last rule is the fallthrough), other environments of changed variations, and prerequisite bounds', () => {
      const fallthroughToNothing = imported('f', { rules: [{ id: 'fallthrough', clauses: [], variationId: 'gone' }] });
      const rows = importedRows([fallthroughToNothing], new Map(), 'production');
      expect(Object.keys(importProblems([fallthroughToNothing], rows, [], new Map(), new Map()))).toEqual([expect.stringMatching(/^flags\.f\.fallthrough/)]);

      const before = rowOf('kept', {}, { environmentKey: 'production' });
      const shrunk = imported('kept', { variations: [OFF] });
      const others = new Map([['id-kept', [envOf('kept', 'production'), envOf('kept', 'staging', { targets: [{ variationId: 'on', values: ['x'] }] })]]]);
      const shrunkRows = importedRows([shrunk], new Map([['kept', before]]), 'production');
      expect(Object.keys(importProblems([shrunk], shrunkRows, [], new Map([['kept', before]]), others))).toEqual([expect.stringMatching(/^flags\.kept\.environments\.staging\.targets\[0\]/)]);

      const chain = Array.from({ length: MAX_PREREQUISITE_DEPTH + 2 }, (_, i) => imported(`c${i}`, { prerequisites: i > 0 ? [{ key: `c${i - 1}`, variationId: 'on' }] : [] }));
      const chainProblems = importProblems(chain, importedRows(chain, new Map(), 'production'), [], new Map(), new Map());
      expect(chainProblems[`flags.c${MAX_PREREQUISITE_DEPTH + 1}.prerequisites`]).toMatch(/lead through a chain/);
    });
  });
});
