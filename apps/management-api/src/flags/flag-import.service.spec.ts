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
});
