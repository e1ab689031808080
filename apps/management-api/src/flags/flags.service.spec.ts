import { MAX_PREREQUISITE_DEPTH, type Variation } from '@flagship/flag-evaluation';
import { problemOf } from '../testing/problem-of';
import { ALICE, ENVIRONMENTS, flagServices, OTHER_TENANT, PROJECT, TENANT } from './flag-services.fixture';
import { etagOf } from './flag.mapper';
import type { CreateFlagDto, UpdateFlagDto } from './flags.dto';
import { FlagsRepository } from './flags.repository';

const boolFlag = (key: string, more: Partial<CreateFlagDto> = {}): CreateFlagDto => ({ key, name: key, type: 'boolean', defaultValue: false, ...more });
const idOf = (variations: readonly Variation[], value: unknown): string => variations.find((v) => v.value === value)!.id;

describe('FlagsService', () => {
  let s: ReturnType<typeof flagServices>;
  beforeEach(() => {
    s = flagServices();
  });

  const create = (dto: CreateFlagDto, env?: string) => s.service.create(TENANT, env, ALICE, dto);
  const patch = (key: string, dto: UpdateFlagDto, env?: string, ifMatch?: string) => s.service.update(TENANT, env, ALICE, key, dto, ifMatch);

  it('the fake is a repository', () => {
    expect(s.repo).toBeInstanceOf(FlagsRepository);
  });

  describe('create', () => {
    it('writes the flag in every environment, switched on only in the request’s, audited as the caller and announced everywhere', async () => {
      const row = await create(boolFlag('checkout', { enabled: true, tags: ['web'] }), 'staging');
      expect([row.env.environmentKey, row.env.enabled, row.flag.variations.map((v) => [v.name, v.value])]).toEqual([
        'staging',
        true,
        [
          ['true', true],
          ['false', false],
        ],
      ]);
      for (const env of ['development', 'production']) expect((await s.service.get(TENANT, env, 'checkout')).env.enabled).toBe(false);
      expect(s.repo.auditRows.map((a) => [a.flagKey, a.action, a.actor, a.environmentKey, a.changes])).toEqual([
        ['checkout', 'create', 'user:alice', null, { key: 'checkout', name: 'checkout', type: 'boolean', defaultValue: false, enabled: true, tags: ['web'] }],
      ]);
      expect(s.announced).toEqual([{ tenantId: TENANT, environments: ENVIRONMENTS, flagKey: 'checkout', version: 1 }]);
    });

    it('gives a flag of another type one variation holding its default, and keeps the variations sent', async () => {
      expect((await create({ key: 'greeting', name: 'g', type: 'string', defaultValue: 'hi' })).flag.variations).toEqual([{ id: expect.any(String), name: 'default', value: 'hi', description: '', weight: 0 }]);
      const sent = await create({ key: 'limit', name: 'l', type: 'number', defaultValue: 10, flag_variations: [{ name: 'ten', value: 10 }, { name: 'big', value: 100, weight: 3, description: 'd' }] });
      expect(sent.flag.variations.map((v) => [v.name, v.value, v.weight, v.description])).toEqual([
        ['ten', 10, 0, ''],
        ['big', 100, 3, 'd'],
      ]);
    });

    it('refuses a key the API’s paths reserve (422 naming key), writing nothing', async () => {
      const p = await problemOf(create(boolFlag('export')));
      expect([p.problem.status, p.extensions['errors']]).toEqual([422, { key: "export is reserved by the API's paths" }]);
      expect(s.repo.countFlags(TENANT)).toBe(0);
      expect(s.announced).toEqual([]);
    });

    it('refuses a default and variations that do not match the type (422 naming each)', async () => {
      const p = await problemOf(create({ key: 'n', name: 'n', type: 'number', defaultValue: 'ten', flag_variations: [{ name: 'a', value: 1 }, { name: 'b', value: '2' }] }));
      expect([p.problem.status, p.extensions['errors']]).toEqual([422, { defaultValue: 'must be a number', 'flag_variations[1].value': 'must be a number' }]);
      const json = await problemOf(create({ key: 'j', name: 'j', type: 'json', defaultValue: 'not an object' }));
      expect(json.extensions['errors']).toEqual({ defaultValue: 'must be a JSON object or array' });
      expect(s.repo.countFlags(TENANT)).toBe(0);
    });

    it('names an unknown project (422), and a project in the path it cannot find is 404 before anything else', async () => {
      const unknown = await problemOf(create(boolFlag('p', { projectId: '00000000-0000-4000-8000-0000000000ff' })));
      expect([unknown.problem.status, unknown.extensions['errors']]).toEqual([422, { projectId: 'names no project of this tenant' }]);
      const inPath = await problemOf(s.service.create(TENANT, undefined, ALICE, boolFlag('p', { defaultValue: 'not a boolean' }), '00000000-0000-4000-8000-0000000000ff'));
      expect(inPath.problem.slug).toBe('project-not-found');
      expect((await s.service.create(TENANT, undefined, ALICE, boolFlag('p'), PROJECT)).flag.projectId).toBe(PROJECT);
    });

    it('refuses a key the tenant has (409 flag-exists); another tenant may have it', async () => {
      await create(boolFlag('taken'));
      const p = await problemOf(create(boolFlag('taken')));
      expect([p.problem.status, p.problem.slug]).toEqual([409, 'flag-exists']);
      expect(s.repo.countFlags(TENANT)).toBe(1);
      expect((await s.service.create(OTHER_TENANT, undefined, ALICE, boolFlag('taken'))).flag.key).toBe('taken');
    });

    it('stops at the tenant’s flag quota (409 naming quota, limit and count), writing nothing', async () => {
      s = flagServices({ QUOTA_FLAGS_PER_TENANT: 2 });
      await create(boolFlag('a'));
      await create(boolFlag('b'));
      const p = await problemOf(create(boolFlag('c')));
      expect([p.problem.status, p.problem.slug, p.extensions]).toEqual([409, 'quota-exceeded', { quota: 'flags-per-tenant', limit: 2, current: 2 }]);
      expect(s.repo.countFlags(TENANT)).toBe(2);
    });
  });

  describe('update', () => {
    it('If-Match: a stale entity tag is 412 with the current version and changes nothing; the current one, *, a weak tag or none apply', async () => {
      const row = await create(boolFlag('f'));
      const stale = await problemOf(patch('f', { name: 'x' }, undefined, '"0.1"'));
      expect([stale.problem.status, stale.problem.slug, stale.extensions]).toEqual([412, 'flag-changed', { currentVersion: '"1.1"' }]);
      expect((await s.service.get(TENANT, undefined, 'f')).flag.name).toBe('f');
      const applied = await patch('f', { name: 'x' }, undefined, `"nope", ${etagOf(row)}`);
      expect(etagOf(applied)).toBe('"2.1"');
      expect(etagOf(await patch('f', { enabled: true }, undefined, 'W/"2.1"'))).toBe('"2.2"');
      expect(etagOf(await patch('f', { enabled: false }, undefined, '*'))).toBe('"2.3"');
      expect(etagOf(await patch('f', { enabled: true }))).toBe('"2.4"');
    });

    it('changes only what was sent: targeting in the request’s environment, a null off value resets it; audited from -> to and announced where it changed', async () => {
      await create(boolFlag('f'));
      await patch('f', { offValue: true, enabled: true }, 'staging');
      const rules = [{ id: 'r', clauses: [{ attribute: 'country', op: 'in' as const, values: ['NO'] }], variationId: idOf((await s.service.get(TENANT, 'staging', 'f')).flag.variations, true) }];
      const kept = await patch('f', { rules, offValue: undefined }, 'staging');
      expect([kept.env.offValue, kept.env.enabled, kept.env.rules]).toEqual([true, true, rules]);
      expect((await patch('f', { offValue: null }, 'staging')).env.offValue).toBeNull();
      expect((await s.service.get(TENANT, 'production', 'f')).env).toMatchObject({ enabled: false, rules: [], offValue: null });
      await patch('f', { name: 'Renamed', tags: ['x'] }, 'staging');
      const updates = s.repo.auditRows.filter((a) => a.action === 'update');
      expect(updates.map((a) => [a.environmentKey, a.changes])).toEqual([
        ['staging', { enabled: { from: false, to: true }, offValue: { from: null, to: true } }],
        ['staging', { rules: { from: [], to: rules } }],
        ['staging', { offValue: { from: true, to: null } }],
        [null, { name: { from: 'f', to: 'Renamed' }, tags: { from: [], to: ['x'] } }],
      ]);
      expect(s.announced.slice(1).map((a) => a.environments)).toEqual([['staging'], ['staging'], ['staging'], ENVIRONMENTS]);
    });

    it('variations per environment: a change of variations must leave the flag valid in every other environment (422 naming it)', async () => {
      const row = await create(boolFlag('f'));
      const on = idOf(row.flag.variations, true);
      await patch('f', { targets: [{ variationId: on, values: ['alice'] }] }, 'staging');
      const p = await problemOf(patch('f', { variations: row.flag.variations.filter((v) => v.id !== on) }, 'production'));
      expect(p.problem.status).toBe(422);
      expect(Object.keys(p.extensions['errors'] as object)).toEqual([expect.stringMatching(/^environments\.staging\.targets\[0\]/)]);
      expect((await s.service.get(TENANT, 'production', 'f')).flag.variations).toHaveLength(2);
    });

    it('types: a default that does not match the flag’s type is 422, in this environment and every other', async () => {
      await create(boolFlag('f'));
      const p = await problemOf(patch('f', { defaultValue: 'yes' }));
      const message = "must be a boolean (the flag's type is boolean)";
      expect(p.extensions['errors']).toEqual({ defaultValue: message, 'environments.development.defaultValue': message, 'environments.staging.defaultValue': message });
      expect((await s.service.get(TENANT, undefined, 'f')).flag.defaultValue).toBe(false);
    });

    it('prerequisites: an unknown flag is 422; bounds are checked below the flag and, for the flags that depend on it, above', async () => {
      const unknown = await problemOf(patch((await create(boolFlag('top'))).flag.key, { prerequisites: [{ key: 'missing', variationId: 'v' }] }));
      expect(Object.keys(unknown.extensions['errors'] as object)).toEqual([expect.stringMatching(/^prerequisites\[0\]/)]);
      // A chain c0 <- c1 <- ... <- cN, each naming the one before, exactly as deep as allowed.
      const keys = Array.from({ length: MAX_PREREQUISITE_DEPTH + 1 }, (_, i) => `c${i}`);
      for (const [i, key] of keys.entries()) {
        await create(boolFlag(key));
        if (i > 0) {
          const below = await s.service.get(TENANT, undefined, keys[i - 1]!);
          await patch(key, { prerequisites: [{ key: keys[i - 1]!, variationId: idOf(below.flag.variations, true) }] });
        }
      }
      const leaf = await create(boolFlag('leaf'));
      const deeper = await problemOf(patch('c0', { prerequisites: [{ key: 'leaf', variationId: idOf(leaf.flag.variations, true) }] }));
      expect(deeper.extensions['errors']).toEqual({ prerequisites: expect.stringMatching(new RegExp(`^flag 'c${MAX_PREREQUISITE_DEPTH}' depends on this one`)) });
      const above = await s.service.get(TENANT, undefined, `c${MAX_PREREQUISITE_DEPTH}`);
      const tooDeep = await problemOf(patch('top', { prerequisites: [{ key: above.flag.key, variationId: idOf(above.flag.variations, true) }] }));
      expect(tooDeep.extensions['errors']).toEqual({ prerequisites: expect.stringContaining(`at most ${MAX_PREREQUISITE_DEPTH} deep`) });
    });

    it("segmentMatch: a segment the request's environment does not have is 422 naming the value; one it has is taken", async () => {
      const empty = { included: ['u1'], excluded: [], includedContexts: [], excludedContexts: [], rules: [] };
      await s.segments.transactions.run((m) => s.segments.insert(m, TENANT, 'staging', { key: 'beta', name: 'Beta', description: '', definition: empty, definitionBytes: 0 }));
      const flag = await create(boolFlag('gated'));
      const on = idOf(flag.flag.variations, true);
      const rules = (...segments: string[]) => [{ id: 'r1', clauses: [{ attribute: '', op: 'segmentMatch' as const, values: segments }], variationId: on }];
      // Only staging has it: production's flag would never match, so it is refused there.
      const missing = await problemOf(patch('gated', { rules: rules('beta') }, 'production'));
      expect(missing.extensions['errors']).toEqual({ 'rules[0].clauses[0].values[0]': "no segment 'beta' in this environment" });
      const written = await patch('gated', { rules: rules('beta') }, 'staging');
      expect(written.env.rules[0]!.clauses[0]).toMatchObject({ op: 'segmentMatch', values: ['beta'] });
      const oneOfTwo = await problemOf(patch('gated', { rules: rules('beta', 'gone') }, 'staging'));
      expect(oneOfTwo.extensions['errors']).toEqual({ 'rules[0].clauses[0].values[1]': "no segment 'gone' in this environment" });
    });

    it('a flag of another tenant or an unknown environment is not found', async () => {
      await s.service.create(OTHER_TENANT, undefined, ALICE, boolFlag('theirs'));
      expect((await problemOf(patch('theirs', { name: 'mine' }))).problem.slug).toBe('flag-not-found');
      expect((await problemOf(s.service.get(TENANT, undefined, 'theirs'))).problem.slug).toBe('flag-not-found');
      expect((await problemOf(s.service.get(OTHER_TENANT, 'qa', 'theirs'))).problem.slug).toBe('environment-not-found');
    });
  });

  describe('size', () => {
    it('a definition over FLAG_MAX_BYTES is 422 naming the longest field sent, and nothing is written', async () => {
      s = flagServices({ FLAG_MAX_BYTES: 600 });
      const big = await problemOf(create({ key: 's', name: 's', type: 'string', defaultValue: 'x'.repeat(700) }));
      expect([big.problem.status, Object.keys(big.extensions['errors'] as object)]).toEqual([422, ['defaultValue']]);
      expect(s.repo.countFlags(TENANT)).toBe(0);
      const row = await create(boolFlag('f'));
      const on = idOf(row.flag.variations, true);
      const targets = [{ variationId: on, values: Array.from({ length: 100 }, (_, i) => `user-${i}`) }];
      const p = await problemOf(patch('f', { targets, enabled: true }, 'staging'));
      expect(p.extensions['errors']).toEqual({ targets: expect.stringContaining('at most 600 bytes') });
      expect((await s.service.get(TENANT, 'staging', 'f')).env).toMatchObject({ targets: [], enabled: false, version: 1 });
      expect(s.repo.auditRows.map((a) => a.action)).toEqual(['create']);
    });

    it("the tenant's byte quota is 409, counting every environment's copy, and nothing is written", async () => {
      s = flagServices({ QUOTA_FLAG_BYTES_PER_TENANT: 1500 });
      await create(boolFlag('a'));
      const used = s.repo.countBytes(TENANT);
      expect(used).toBeGreaterThan(0);
      const p = await problemOf(create(boolFlag('b')));
      expect([p.problem.status, p.extensions]).toEqual([409, { quota: 'flag-bytes-per-tenant', limit: 1500, current: used }]);
      expect([s.repo.countFlags(TENANT), s.repo.countBytes(TENANT)]).toEqual([1, used]);
    });
  });

  describe('remove', () => {
    it('a prerequisite of another flag is 409 flag-in-use naming it; once free, it goes in every environment, audited and announced', async () => {
      const base = await create(boolFlag('base'));
      await create(boolFlag('user'));
      await patch('user', { prerequisites: [{ key: 'base', variationId: idOf(base.flag.variations, true) }] }, 'staging');
      const p = await problemOf(s.service.remove(TENANT, ALICE, 'base'));
      expect([p.problem.status, p.problem.slug, p.extensions]).toEqual([409, 'flag-in-use', { dependents: ['user'] }]);
      await patch('user', { prerequisites: [] }, 'staging');
      await s.service.remove(TENANT, ALICE, 'base');
      expect((await problemOf(s.service.get(TENANT, undefined, 'base'))).problem.slug).toBe('flag-not-found');
      expect(s.repo.auditRows.at(-1)).toMatchObject({ flagKey: 'base', action: 'delete', actor: 'user:alice' });
      expect(s.announced.at(-1)).toEqual({ tenantId: TENANT, environments: ENVIRONMENTS, flagKey: 'base', version: 0 });
      expect((await problemOf(s.service.remove(TENANT, ALICE, 'base'))).problem.slug).toBe('flag-not-found');
    });
  });

  describe('list by lifecycle (stale flags)', () => {
    const DAY = 86_400_000;
    const at = (days: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + days * DAY);
    const keys = async (lifecycle: 'stale' | 'active', staleAfterDays?: number, env = 'production') =>
      (await s.service.list(TENANT, env, 100, undefined, undefined, { lifecycle, staleAfterDays })).map((r) => r.flag.key);

    it('a flag serving one value since its last write is stale once STALE_AFTER_DAYS (30) pass, even when evaluated every day; a rollout to several is not', async () => {
      s.repo.setNow(at(0));
      await create(boolFlag('off-flag'));
      await create(boolFlag('split', { enabled: true }));
      const split = await s.service.get(TENANT, 'production', 'split');
      await patch('split', { variations: split.flag.variations.map((v) => ({ ...v, weight: 50 })) }, 'production', etagOf(split));
      s.repo.setNow(at(29));
      for (const key of ['off-flag', 'split']) s.repo.recordEvaluation(TENANT, 'production', key, at(29));
      expect(await keys('stale')).toEqual([]);
      s.repo.setNow(at(31));
      for (const key of ['off-flag', 'split']) s.repo.recordEvaluation(TENANT, 'production', key, at(31));
      expect(await keys('stale')).toEqual(['off-flag']);
      expect(await keys('active')).toEqual(['split']);
      // The request's days replace the default; another environment has its own evaluations.
      expect(await keys('stale', 35)).toEqual([]);
      expect(await keys('stale', 1, 'staging')).toEqual(['off-flag', 'split']);
    });

    it('switching a flag on to several values clears its since; off again starts a new one', async () => {
      s.repo.setNow(at(0));
      const row = await create(boolFlag('checkout'));
      // Dated by the write (the fake's clock moves a millisecond a write).
      const near = (d: Date | null | undefined, to: Date) => Math.abs(d!.getTime() - to.getTime()) < 100;
      expect(near(row.env.servingOneVariationSince, at(0))).toBe(true);
      s.repo.setNow(at(40));
      const on = await patch('checkout', { enabled: true, targets: [{ variationId: idOf(row.flag.variations, true), values: ['alice'] }] }, 'production', etagOf(row));
      expect(on.env.servingOneVariationSince).toBeNull();
      s.repo.recordEvaluation(TENANT, 'production', 'checkout', at(40));
      expect(await keys('stale')).toEqual([]);
      s.repo.setNow(at(41));
      const off = await patch('checkout', { enabled: false }, 'production', etagOf(on));
      expect(near(off.env.servingOneVariationSince, at(41))).toBe(true);
      expect(off.lastEvaluatedAt).toEqual(at(40));
    });
  });

  describe('createWithin (flags written in the caller’s transaction: the sandbox)', () => {
    const seed = (variations: Variation[], prerequisites = [{ key: 'a', variationId: 'va-on' }]) => [
      { key: 'a', name: 'A', type: 'boolean' as const, defaultValue: false, description: '', tags: [], projectId: null, variations, targeting: { enabled: true, targets: [], rules: [], prerequisites: [] } },
      { key: 'b', name: 'B', type: 'boolean' as const, defaultValue: false, description: '', tags: [], projectId: null, variations: [{ id: 'vb', name: 'on', value: true, description: '', weight: 0 }], targeting: { enabled: true, targets: [], rules: [], prerequisites } },
    ];
    const onOff: Variation[] = [
      { id: 'va-on', name: 'on', value: true, description: '', weight: 0 },
      { id: 'va-off', name: 'off', value: false, description: '', weight: 0 },
    ];

    it('writes them on in every environment, audited as the actor, counted, and announces them only once the transaction commits', async () => {
      let announcedInside = -1;
      await s.repo.transactions.run(async (m) => {
        await s.service.createWithin(m, TENANT, 'user:maker', seed(onOff));
        announcedInside = s.announced.length;
      });
      expect(announcedInside).toBe(0);
      expect(s.announced).toEqual([
        { tenantId: TENANT, environments: ENVIRONMENTS, flagKey: 'a', version: 1 },
        { tenantId: TENANT, environments: ENVIRONMENTS, flagKey: 'b', version: 1 },
      ]);
      for (const env of ENVIRONMENTS) expect((await s.service.get(TENANT, env, 'b')).env).toMatchObject({ enabled: true, prerequisites: [{ key: 'a', variationId: 'va-on' }] });
      expect(s.repo.auditRows.map((a) => [a.flagKey, a.action, a.actor])).toEqual([
        ['a', 'create', 'user:maker'],
        ['b', 'create', 'user:maker'],
      ]);
      expect(s.repo.countBytes(TENANT)).toBeGreaterThan(0);
    });

    it('refuses what any write refuses (a value of the wrong type, a prerequisite naming no variation), writing and announcing nothing', async () => {
      const wrongType = await problemOf(s.repo.transactions.run((m) => s.service.createWithin(m, TENANT, 'user:maker', seed([{ ...onOff[0]!, value: 'yes' }, onOff[1]!]))));
      expect(wrongType.extensions['errors']).toEqual({ 'a.variations[0].value': 'must be a boolean' });
      const badPrerequisite = await problemOf(s.repo.transactions.run((m) => s.service.createWithin(m, TENANT, 'user:maker', seed(onOff, [{ key: 'a', variationId: 'nope' }]))));
      expect(Object.keys(badPrerequisite.extensions['errors'] as object)).toEqual(ENVIRONMENTS.map((e) => expect.stringMatching(new RegExp(`^environments\\.${e}\\.b\\.prerequisites\\[0\\]`))));
      expect([s.repo.countFlags(TENANT), s.repo.auditRows.length, s.announced.length]).toEqual([0, 0, 0]);
    });

    it("refuses a segmentMatch naming a segment the environment does not have, per environment", async () => {
      const seeded = seed(onOff, []);
      seeded[1]!.targeting.rules = [{ id: 'r', clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta'] }], variationId: 'vb' }] as never;
      const refused = await problemOf(s.repo.transactions.run((m) => s.service.createWithin(m, TENANT, 'user:maker', seeded)));
      expect(refused.extensions['errors']).toEqual(Object.fromEntries(ENVIRONMENTS.map((e) => [`environments.${e}.b.rules[0].clauses[0].values[0]`, "no segment 'beta' in this environment"])));
      expect(s.repo.countFlags(TENANT)).toBe(0);
    });

    it('is held to the flag quota', async () => {
      s = flagServices({ QUOTA_FLAGS_PER_TENANT: 1 });
      const p = await problemOf(s.repo.transactions.run((m) => s.service.createWithin(m, TENANT, 'user:maker', seed(onOff))));
      expect(p.extensions).toEqual({ quota: 'flags-per-tenant', limit: 1, current: 0 });
    });
  });

  it('variations and the export read the tenant’s flags; the export is by key', async () => {
    await create(boolFlag('zeta'));
    await create(boolFlag('alpha'));
    expect((await s.service.variations(TENANT, 'zeta')).map((v) => v.name)).toEqual(['true', 'false']);
    const file = await s.service.export(TENANT, 'staging');
    expect([file.tenantId, file.environment, file.flags.map((d) => d.key)]).toEqual([TENANT, 'staging', ['alpha', 'zeta']]);
    expect((await problemOf(s.service.variations(OTHER_TENANT, 'zeta'))).problem.slug).toBe('flag-not-found');
  });
});
