import { problemOf } from '../testing/problem-of';
import { ALICE, ENVIRONMENTS, flagServices, TENANT } from './flag-services.fixture';
import { IMPORT_MAX_FLAGS } from './flag-rules';

/** A LaunchDarkly boolean flag, on, serving `true` to everyone; `more` overrides its fields. */
const ld = (key: string, more: Record<string, unknown> = {}) => ({ key, on: true, variations: [true, false], offVariation: 1, fallthrough: { variation: 0 }, targets: [], rules: [], prerequisites: [], salt: `${key}-salt`, ...more });
const body = (...flags: Array<ReturnType<typeof ld>>) => ({ flags: Object.fromEntries(flags.map((f) => [f.key, f])) });

describe('FlagImportService', () => {
  let s: ReturnType<typeof flagServices>;
  beforeEach(() => {
    s = flagServices();
  });

  const importing = (data: unknown, env = 'staging') => s.imports.importLaunchDarkly(TENANT, env, ALICE, data);
  const keys = async () => (await s.repo.definitions(TENANT, 'production')).map((d) => d.key);

  it('where approval is required: an import there is 409 approval-required, and so is replacing a flag elsewhere; new flags elsewhere are written', async () => {
    await s.service.create(TENANT, undefined, ALICE, { key: 'kept', name: 'Kept', type: 'boolean', defaultValue: false });
    s.approvals.set(TENANT, ['production']);
    const there = await problemOf(importing(body(ld('fresh')), 'production'));
    expect([there.problem.status, there.problem.slug]).toEqual([409, 'approval-required']);
    const replacing = await problemOf(importing(body(ld('kept'), ld('fresh'))));
    expect([replacing.problem.slug, replacing.detail]).toEqual(['approval-required', expect.stringMatching(/replaces the variations of kept/)]);
    expect(await keys()).toEqual(['kept']);
    expect((await importing(body(ld('fresh')))).created).toEqual(['fresh']);
  });

  it('creates new flags and replaces existing ones in the request’s environment, one audit record each, announced', async () => {
    await s.service.create(TENANT, undefined, ALICE, { key: 'kept', name: 'Kept', type: 'boolean', defaultValue: false });
    const result = await importing(body(ld('kept', { on: false }), ld('fresh', { version: 7 })));
    expect([result.environment, result.created, result.replaced, result.rows.map((r) => [r.flag.key, r.env.environmentKey, r.env.enabled, r.env.salt])]).toEqual([
      'staging',
      ['fresh'],
      ['kept'],
      [
        ['kept', 'staging', false, 'kept-salt'],
        ['fresh', 'staging', true, 'fresh-salt'],
      ],
    ]);
    // Other environments keep their targeting; a new flag is off there.
    expect((await s.service.get(TENANT, 'production', 'fresh')).env).toMatchObject({ enabled: false, salt: null });
    expect(s.repo.auditRows.filter((a) => a.action === 'import').map((a) => [a.flagKey, a.environmentKey, a.changes['created'], a.changes['sourceVersion']])).toEqual([
      ['kept', 'staging', false, null],
      ['fresh', 'staging', true, 7],
    ]);
    expect(s.announced.slice(1).map((a) => [a.flagKey, a.environments])).toEqual([
      ['kept', ENVIRONMENTS],
      ['fresh', ENVIRONMENTS],
    ]);
  });

  it('counts the import’s new flags together against the flag quota: all fit, or nothing is written (replacing adds none)', async () => {
    s = flagServices({ QUOTA_FLAGS_PER_TENANT: 5 });
    for (const key of ['kept-1', 'kept-2']) await s.service.create(TENANT, undefined, ALICE, { key, name: key, type: 'boolean', defaultValue: false });
    const auditBefore = s.repo.auditRows.length;
    const refused = await problemOf(importing(body(ld('kept-1', { on: false }), ld('a'), ld('b'), ld('c'), ld('d'))));
    expect([refused.problem.status, refused.extensions]).toEqual([409, { quota: 'flags-per-tenant', limit: 5, current: 2 }]);
    expect([await keys(), s.repo.auditRows.length]).toEqual([['kept-1', 'kept-2'], auditBefore]);
    expect((await s.service.get(TENANT, 'staging', 'kept-1')).env).toMatchObject({ enabled: false, salt: null, version: 1 });
    const fits = await importing(body(ld('kept-1'), ld('a'), ld('b'), ld('c')));
    expect([fits.created, fits.replaced]).toEqual([['a', 'b', 'c'], ['kept-1']]);
    expect(s.repo.countFlags(TENANT)).toBe(5);
  });

  it('counts the import’s bytes together against the byte quota: 409 naming the flags that add most, and nothing is written', async () => {
    s = flagServices({ QUOTA_FLAG_BYTES_PER_TENANT: 5000 });
    const targets = (n: number) => [{ variation: 0, values: Array.from({ length: n }, (_, i) => `user-${i}`) }];
    const refused = await problemOf(importing(body(ld('small'), ld('large', { targets: targets(300) }), ld('medium', { targets: targets(80) }))));
    expect([refused.problem.status, refused.extensions['quota'], refused.extensions['limit'], refused.extensions['current']]).toEqual([409, 'flag-bytes-per-tenant', 5000, 0]);
    expect(Object.keys(refused.extensions['adds'] as object)).toEqual(['large', 'medium', 'small']);
    expect([await keys(), s.repo.countBytes(TENANT), s.repo.auditRows.length, s.announced.length]).toEqual([[], 0, 0, 0]);
    expect((await importing(body(ld('small')))).created).toEqual(['small']);
  });

  it('a flag over FLAG_MAX_BYTES is 422 naming it, and nothing of the import is written', async () => {
    s = flagServices({ FLAG_MAX_BYTES: 1000 });
    const p = await problemOf(importing(body(ld('fine'), ld('huge', { targets: [{ variation: 0, values: Array.from({ length: 100 }, (_, i) => `user-${i}`) }] }))));
    expect([p.problem.status, Object.keys(p.extensions['errors'] as object)]).toEqual([422, ['flags.huge']]);
    expect(await keys()).toEqual([]);
  });

  it('refuses a reserved key, and more flags than one import may hold, before anything is read', async () => {
    const reserved = await problemOf(importing(body(ld('export'))));
    expect(reserved.extensions['errors']).toEqual({ 'flags.export.key': "export is reserved by the API's paths" });
    const many = await problemOf(importing(body(...Array.from({ length: IMPORT_MAX_FLAGS + 1 }, (_, i) => ld(`f${i}`)))));
    expect(many.extensions['errors']).toEqual({ flags: `at most ${IMPORT_MAX_FLAGS} flags per request` });
    expect(await keys()).toEqual([]);
  });

  it('one import per tenant at a time: another under way is 409 import-in-progress with Retry-After', async () => {
    s.repo.importsUnderWay.add(TENANT);
    const p = await problemOf(importing(body(ld('a'))));
    expect([p.problem.status, p.problem.slug, p.headers]).toEqual([409, 'import-in-progress', { 'Retry-After': '2' }]);
  });

  it('validates the import as a whole: prerequisites among its flags, bounds, and every other environment of a flag whose variations change', async () => {
    const together = await importing(body(ld('child', { prerequisites: [{ key: 'parent', variation: 0 }] }), ld('parent')));
    expect(together.created).toEqual(['child', 'parent']);
    const unknown = await problemOf(importing(body(ld('orphan', { prerequisites: [{ key: 'nobody', variation: 0 }] }))));
    expect(Object.keys(unknown.extensions['errors'] as object)).toEqual([expect.stringMatching(/^flags\.orphan\.prerequisites\[0\]/)]);
    // parent, targeted in production on its second variation, loses that variation in a staging import.
    const parent = await s.service.get(TENANT, 'production', 'parent');
    await s.service.update(TENANT, 'production', ALICE, 'parent', { targets: [{ variationId: parent.flag.variations[1]!.id, values: ['alice'] }] });
    const shrinking = await problemOf(importing(body(ld('parent', { variations: [true], offVariation: 0 }))));
    expect(Object.keys(shrinking.extensions['errors'] as object)).toEqual([expect.stringMatching(/^flags\.parent\.environments\.production\.targets\[0\]/)]);
    expect((await s.service.get(TENANT, 'staging', 'parent')).flag.variations).toHaveLength(2);
    expect(await keys()).toEqual(['child', 'parent']);
  });

  describe('segments beside flags (one request, all or nothing)', () => {
    /** A LaunchDarkly segment; `more` overrides its fields. */
    const lds = (key: string, more: Record<string, unknown> = {}) => ({ key, included: [], excluded: [], rules: [], salt: `${key}-salt`, version: 3, ...more });
    const inSegment = (key: string, ...segmentKeys: string[]) => ld(key, { rules: [{ id: 'seg', clauses: [{ attribute: 'key', op: 'segmentMatch', values: segmentKeys }], variation: 1 }] });
    const withSegments = (segments: Array<ReturnType<typeof lds>>, ...flags: Array<ReturnType<typeof ld>>) => ({ ...body(...flags), segments: Object.fromEntries(segments.map((x) => [x.key, x])) });
    const segmentKeys = async (env = 'staging') => (await s.segments.definitions(TENANT, env)).map((d) => d.key);

    it('writes the segments and the flags naming them in the request’s environment, audited and announced once committed', async () => {
      const orgs = lds('big-orgs', { includedContexts: [{ contextKind: 'organization', values: ['acme'] }], rules: [{ id: 'r', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'], contextKind: 'organization' }], weight: 50000, rolloutContextKind: 'organization' }] });
      const result = await importing(withSegments([lds('beta', { included: ['u1'] }), orgs], inSegment('gated', 'beta', 'big-orgs')));
      expect([result.created, result.segments]).toEqual([['gated'], { created: ['beta', 'big-orgs'], replaced: [] }]);
      expect(await s.segments.definitions(TENANT, 'staging')).toEqual([
        expect.objectContaining({ key: 'beta', included: ['u1'], salt: 'beta-salt' }),
        expect.objectContaining({ key: 'big-orgs', includedContexts: [{ contextKind: 'organization', values: ['acme'] }], rules: [expect.objectContaining({ weight: 50000, rolloutContextKind: 'organization' })] }),
      ]);
      expect(await segmentKeys('production')).toEqual([]);
      expect((await s.service.get(TENANT, 'staging', 'gated')).env.rules[0]!.clauses[0]).toMatchObject({ op: 'segmentMatch', values: ['beta', 'big-orgs'] });
      expect(s.announcedSegments.map(([t, e, k]) => [t, e, k])).toEqual([
        [TENANT, 'staging', 'beta'],
        [TENANT, 'staging', 'big-orgs'],
      ]);
      // Imported again: replaced, and a flag may name a segment stored before (not in this request).
      const again = await importing(withSegments([lds('beta', { included: ['u2'] })], inSegment('gated', 'big-orgs'), inSegment('other', 'beta')));
      expect([again.created, again.replaced, again.segments]).toEqual([['other'], ['gated'], { created: [], replaced: ['beta'] }]);
      expect((await s.segments.definitions(TENANT, 'staging')).find((d) => d.key === 'beta')!.included).toEqual(['u2']);
    });

    it('one bad segment refuses the whole import by path: no segment, no flag, no audit, nothing announced', async () => {
      const p = await problemOf(importing(withSegments([lds('good'), lds('bad', { unbounded: true, included: 'u1' })], inSegment('gated', 'good'), ld('plain'))));
      expect([p.problem.status, p.extensions['errors']]).toEqual([422, { 'segments.bad.unbounded': expect.any(String), 'segments.bad.included': 'must be an array of context keys' }]);
      expect([await keys(), await segmentKeys(), s.repo.auditRows.length, s.announced.length, s.announcedSegments.length]).toEqual([[], [], 0, 0, 0]);
    });

    it('a segment over the segments’ own bounds (checked by SegmentsService within the import) refuses the flags too', async () => {
      const huge = lds('huge', { included: Array.from({ length: 10_001 }, (_, i) => `u${i}`) });
      const p = await problemOf(importing(withSegments([lds('fine'), huge], ld('plain'))));
      expect([p.problem.status, Object.keys(p.extensions['errors'] as object)]).toEqual([422, [expect.stringMatching(/^segments\.huge\b/)]]);
      expect([await keys(), await segmentKeys(), s.repo.auditRows.length]).toEqual([[], [], 0]);
    });

    it('a flag naming a segment neither in the import nor stored is 422 by path, and the import’s segments are not written', async () => {
      const p = await problemOf(importing(withSegments([lds('beta')], inSegment('gated', 'beta', 'nobody'))));
      expect([p.problem.status, p.extensions['errors']]).toEqual([422, { 'flags.gated.rules[0].clauses[0].values[1]': expect.stringContaining('"nobody"') }]);
      expect([await keys(), await segmentKeys()]).toEqual([[], []]);
      // Stored in another environment is not stored here.
      await importing(withSegments([lds('nobody')]), 'production');
      expect((await problemOf(importing(withSegments([], inSegment('gated', 'nobody'))))).problem.status).toBe(422);
    });

    it('counts the import’s new segments together against the segment quota, and a flag quota refusal undoes the segments written', async () => {
      s = flagServices({ QUOTA_SEGMENTS_PER_TENANT: 2, QUOTA_FLAGS_PER_TENANT: 1 });
      const tooMany = await problemOf(importing(withSegments([lds('a'), lds('b'), lds('c')], ld('plain'))));
      expect([tooMany.problem.status, tooMany.extensions]).toEqual([409, { quota: 'segments-per-tenant', limit: 2, current: 0 }]);
      expect([await keys(), await segmentKeys()]).toEqual([[], []]);
      const flagsOver = await problemOf(importing(withSegments([lds('a'), lds('b')], ld('one'), ld('two'))));
      expect([flagsOver.problem.status, flagsOver.extensions['quota']]).toEqual([409, 'flags-per-tenant']);
      expect([await keys(), await segmentKeys(), s.announcedSegments]).toEqual([[], [], []]);
      expect((await importing(withSegments([lds('a'), lds('b')], ld('one')))).segments.created).toEqual(['a', 'b']);
    });
  });
});
