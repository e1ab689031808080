import Redis from 'ioredis';
import { http } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * Never-matching clause values accepted with warnings, and POST /api/flags/import of LaunchDarkly's
 * server-side SDK data, through real HTTP, Postgres and Redis.
 */
describe('LaunchDarkly data: warnings and import (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let stranger: SignedUp;
  const as = (u: SignedUp, headers?: Record<string, string>) => ({ token: u.idToken, tenant: u.tenantId, headers });
  const importAs = (u: SignedUp, json: unknown, headers?: Record<string, string>) => f.call('POST', '/api/flags/import', { ...as(u, headers), json });

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    owner = await f.signUp();
    stranger = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  describe('clause values that can never match', () => {
    const neverMatching = [
      { attribute: 'plan', op: 'startsWith', values: [42, null] },
      { attribute: 'age', op: 'lessThan', values: ['18'] },
      { attribute: 'version', op: 'semVerEqual', values: ['v1.2.3'] },
      { attribute: 'signup', op: 'before', values: ['yesterday'] },
      { attribute: 'email', op: 'matches', values: ['(unclosed'] },
      { attribute: 'country', op: 'in', values: [null] },
    ];

    it('are accepted by PATCH with warnings in the write answer, and evaluate as non-matching', async () => {
      expect((await f.call('POST', '/api/flags', { ...as(owner), json: { key: 'odd-values', name: 'Odd', type: 'boolean', defaultValue: false } })).body.warnings).toEqual([]);
      const flag = (await f.call('GET', '/api/flags/odd-values', as(owner))).body;
      const on = flag.variations[0].id;
      const res = await f.call('PATCH', '/api/flags/odd-values', {
        ...as(owner),
        json: {
          enabled: true,
          rules: [
            ...neverMatching.map((c, i) => ({ id: `odd-${i}`, clauses: [c], variationId: on })),
            { id: 'negated', clauses: [{ attribute: 'plan', op: 'startsWith', values: [42], negate: true }], variationId: on },
          ],
        },
      });
      expect(res.status).toBe(200);
      expect(res.body.warnings).toEqual([
        { path: 'rules[0].clauses[0].values[0]', message: "must be a string for 'startsWith': this value never matches" },
        { path: 'rules[0].clauses[0].values[1]', message: "must be a string for 'startsWith': this value never matches" },
        { path: 'rules[1].clauses[0].values[0]', message: "must be a number for 'lessThan': this value never matches" },
        { path: 'rules[2].clauses[0].values[0]', message: "must be a semantic version such as 1.2.3 (no leading v) for 'semVerEqual': this value never matches" },
        { path: 'rules[3].clauses[0].values[0]', message: "must be epoch milliseconds or an RFC 3339 date-time for 'before': this value never matches" },
        { path: 'rules[4].clauses[0].values[0]', message: "is not a valid regular expression for 'matches': this value never matches" },
        { path: 'rules[5].clauses[0].values[0]', message: "is null for 'in': this value never matches" },
        { path: 'rules[6].clauses[0].values[0]', message: "must be a string for 'startsWith': this value never matches" },
      ]);
      const ev = (attributes: Record<string, unknown>) => f.call('POST', '/api/flags/odd-values/evaluate', { ...as(owner), json: { userId: 'u1', attributes } });
      // Every attribute a never-matching value could be confused with: no odd rule matches.
      expect((await ev({ age: '17', version: '1.2.3', signup: 'yesterday', email: '(unclosed', country: null })).body).toMatchObject({ reason: 'FALLTHROUGH' });
      // The negated clause matches whoever has the attribute, as in LaunchDarkly.
      expect((await ev({ plan: '42' })).body).toMatchObject({ reason: 'RULE_MATCH', ruleId: 'negated' });
    });

    it('are reported on every read: GET and the list', async () => {
      const got = await f.call('GET', '/api/flags/odd-values', as(owner));
      expect(got.body.warnings).toHaveLength(8);
      const listed = (await f.call('GET', '/api/flags', as(owner))).body.find((x: { key: string }) => x.key === 'odd-values');
      expect(listed.warnings).toEqual(got.body.warnings);
      // Warnings belong to the environment whose targeting has them.
      expect((await f.call('GET', '/api/flags/odd-values', as(owner, { 'x-environment': 'staging' }))).body.warnings).toEqual([]);
    });

    it('what cannot be evaluated is still refused: unknown operator, unknown variation, no variation, cycles', async () => {
      const patch = (rules: unknown) => f.call('PATCH', '/api/flags/odd-values', { ...as(owner), json: { rules } });
      const unknownOp = await patch([{ id: 'r', clauses: [{ attribute: 'a', op: 'oneOf', values: ['x'] }], variationId: 'nope' }]);
      expect([unknownOp.status, unknownOp.body.errors]).toEqual([
        422,
        { 'rules[0].clauses[0].op': "unknown operator 'oneOf'", 'rules[0].variationId': "names no variation of this flag ('nope')" },
      ]);
      expect((await patch([{ id: 'r', clauses: [] }])).body.errors).toEqual({ 'rules[0]': 'needs exactly one of variationId and rollout' });
      expect((await f.call('GET', '/api/flags/odd-values', as(owner))).body.rules).toHaveLength(7);
    });
  });

  describe('POST /api/flags/import', () => {
    // LaunchDarkly's SDK data, as its relay proxy serves it (`/sdk/latest-all`).
    const sdkData = () => ({
      flags: {
        'ld-parent': {
          key: 'ld-parent',
          version: 12,
          on: true,
          variations: [true, false],
          offVariation: 1,
          fallthrough: { variation: 0 },
          targets: [{ values: ['blocked'], variation: 1 }],
          rules: [],
          prerequisites: [],
          salt: 'parent-salt',
          trackEvents: false,
          clientSide: true,
          deleted: false,
        },
        'ld-banner': {
          key: 'ld-banner',
          version: 3,
          on: true,
          variations: ['control', 'treatment', 'holdout'],
          offVariation: 2,
          fallthrough: { rollout: { variations: [{ variation: 0, weight: 25000 }, { variation: 1, weight: 75000 }], seed: 61 } },
          targets: [{ values: ['qa-1', 'qa-2'], variation: 1 }],
          contextTargets: [{ contextKind: 'user', values: [], variation: 1 }],
          rules: [
            { id: 'r-old', clauses: [{ attribute: '/weird', op: 'in', values: ['yes'], negate: false }], variation: 2, trackEvents: false },
            { id: 'r-new', clauses: [{ contextKind: 'user', attribute: '/address/city', op: 'in', values: ['Oslo'] }], variation: 1 },
            { id: 'r-odd', clauses: [{ attribute: 'age', op: 'greaterThan', values: ['21'] }], variation: 1 },
            { id: 'r-split', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], rollout: { variations: [{ variation: 0, weight: 50000 }, { variation: 1, weight: 50000 }], bucketBy: 'org', seed: 7 } },
          ],
          prerequisites: [{ key: 'ld-parent', variation: 0 }],
          salt: 'banner-salt',
        },
        'ld-gone': { key: 'ld-gone', version: 9, deleted: true },
      },
      segments: {},
    });

    it('creates the flags, maps indexes to ids and weights to relative weights, keeps salts and seeds', async () => {
      const res = await importAs(owner, sdkData());
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ environment: 'production', created: ['ld-parent', 'ld-banner'], replaced: [], skipped: [{ key: 'ld-gone', reason: expect.any(String) }] });
      const banner = res.body.flags.find((x: { key: string }) => x.key === 'ld-banner');
      const parent = res.body.flags.find((x: { key: string }) => x.key === 'ld-parent');
      const [control, treatment, holdout] = banner.variations.map((v: { id: string }) => v.id);
      expect(banner).toMatchObject({
        type: 'string',
        name: 'ld-banner',
        enabled: true,
        offValue: 'holdout',
        defaultValue: 'holdout',
        salt: 'banner-salt',
        targets: [{ variationId: treatment, values: ['qa-1', 'qa-2'] }],
        prerequisites: [{ key: 'ld-parent', variationId: parent.variations[0].id }],
        warnings: [{ path: 'rules[2].clauses[0].values[0]', message: "must be a number for 'greaterThan': this value never matches" }],
      });
      expect(banner.variations.map((v: { value: string }) => v.value)).toEqual(['control', 'treatment', 'holdout']);
      expect(banner.rules).toEqual([
        // LaunchDarkly's attributes as they are, with the contextKind that says how they read.
        { id: 'r-old', clauses: [{ attribute: '/weird', op: 'in', values: ['yes'] }], variationId: holdout },
        { id: 'r-new', clauses: [{ attribute: '/address/city', contextKind: 'user', op: 'in', values: ['Oslo'] }], variationId: treatment },
        { id: 'r-odd', clauses: [{ attribute: 'age', op: 'greaterThan', values: ['21'] }], variationId: treatment },
        { id: 'r-split', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], rollout: { variations: [{ variationId: control, weight: 50000 }, { variationId: treatment, weight: 50000 }], bucketBy: 'org', seed: 7 } },
        { id: 'fallthrough', description: 'LaunchDarkly fallthrough', clauses: [], rollout: { variations: [{ variationId: control, weight: 25000 }, { variationId: treatment, weight: 75000 }], seed: 61 } },
      ]);
      // Other environments get the flag switched off, as a new flag.
      expect((await f.call('GET', '/api/flags/ld-banner', as(owner, { 'x-environment': 'staging' }))).body).toMatchObject({ enabled: false, rules: [] });
    });

    it('the imported flags evaluate as LaunchDarkly would serve them', async () => {
      const ev = async (userId: string, attributes: Record<string, unknown> = {}) =>
        (await f.call('POST', '/api/flags/ld-banner/evaluate', { ...as(owner), json: { userId, attributes } })).body;
      expect(await ev('qa-1')).toMatchObject({ value: 'treatment', reason: 'TARGET_MATCH' });
      expect(await ev('u', { '/weird': 'yes' })).toMatchObject({ value: 'holdout', reason: 'RULE_MATCH', ruleId: 'r-old' });
      expect(await ev('u', { address: { city: 'Oslo' } })).toMatchObject({ value: 'treatment', ruleId: 'r-new' });
      expect(await ev('u', { age: 30 })).toMatchObject({ reason: 'FALLTHROUGH' });
      expect(await ev('u', { age: 30 })).not.toHaveProperty('ruleId');
      // The prerequisite serves false to `blocked`, so the banner serves its off variation.
      expect(await ev('blocked')).toMatchObject({ value: 'holdout', reason: 'PREREQUISITE_FAILED' });
      // userKeyA's bucket with seed 61 is 0.098: inside the first 25 %.
      expect(await ev('userKeyA')).toMatchObject({ value: 'control' });
    });

    it('replaces by key, keeps variation ids, writes one audit record per flag and announces every environment', async () => {
      const before = (await f.call('GET', '/api/flags/ld-banner', as(owner))).body;
      const sub = new Redis(f.te.redis.url);
      const messages: Array<{ flagKey: string; environment: string }> = [];
      await sub.subscribe(`${f.te.redis.prefix}ch:flag-changed`);
      sub.on('message', (_c, m) => messages.push(JSON.parse(m)));
      const data = sdkData();
      data.flags['ld-banner'].on = false;
      data.flags['ld-banner'].rules = [];
      const res = await importAs(owner, data);
      await new Promise((r) => setTimeout(r, 200));
      sub.disconnect();
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ created: [], replaced: ['ld-parent', 'ld-banner'] });
      const after = (await f.call('GET', '/api/flags/ld-banner', as(owner))).body;
      expect(after.variations.map((v: { id: string }) => v.id)).toEqual(before.variations.map((v: { id: string }) => v.id));
      expect([after.enabled, after.rules.map((r: { id: string }) => r.id), after.warnings]).toEqual([false, ['fallthrough'], []]);
      const audit = (await f.call('GET', '/api/flags/ld-banner/audit', as(owner))).body;
      expect(audit.map((a: { action: string }) => a.action)).toEqual(['import', 'import']);
      expect(audit[0]).toMatchObject({ actor: `user:${owner.userId}`, environment: 'production', changes: { source: 'launchdarkly', sourceVersion: 3, created: true } });
      expect(messages).toEqual(
        expect.arrayContaining(['development', 'production', 'staging'].flatMap((environment) => ['ld-parent', 'ld-banner'].map((flagKey) => expect.objectContaining({ flagKey, environment })))),
      );
      expect((await f.call('GET', '/api/flags/ld-gone', as(owner))).status).toBe(404);
    });

    it('imports into the environment named by X-Environment only; a plain array of flags works too', async () => {
      const data = sdkData();
      const res = await importAs(owner, [data.flags['ld-parent']], { 'x-environment': 'staging' });
      expect([res.status, res.body.environment, res.body.replaced, res.text]).toEqual([200, 'staging', ['ld-parent'], res.text]);
      expect((await f.call('GET', '/api/flags/ld-parent', as(owner, { 'x-environment': 'staging' }))).body).toMatchObject({ enabled: true, salt: 'parent-salt' });
      expect((await importAs(owner, data, { 'x-environment': 'moon' })).status).toBe(404);
    });

    it('refuses what the contract cannot express with a 422 naming flag and clause, and writes nothing of that request', async () => {
      const auditBefore = (await f.call('GET', '/api/flags/ld-parent/audit', as(owner))).body.length;
      const data = {
        flags: {
          'ld-fresh': { key: 'ld-fresh', on: true, variations: [1, 2], offVariation: 0, fallthrough: { variation: 1 }, salt: 's' },
          'ld-parent': { ...sdkData().flags['ld-parent'], on: false },
          'ld-segment': {
            key: 'ld-segment',
            on: true,
            variations: [true, false],
            offVariation: 1,
            fallthrough: { variation: 0 },
            rules: [
              { id: 'r0', clauses: [{ attribute: 'segmentMatch', op: 'segmentMatch', values: ['beta-users'] }], variation: 0 },
              { id: 'r1', clauses: [{ contextKind: 'org anization', attribute: 'key', op: 'in', values: ['acme'] }], variation: 0 },
              { id: 'r2', clauses: [], rollout: { kind: 'experiment', variations: [{ variation: 0, weight: 100000 }] } },
            ],
          },
        },
      };
      const res = await importAs(owner, data);
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({
        'flags.ld-segment.rules[0].clauses[0].values[0]': 'names no segment of this import or this environment ("beta-users")',
        'flags.ld-segment.rules[1].clauses[0].contextKind': "'org anization' is not a context kind",
        'flags.ld-segment.rules[2].rollout.kind': "a rollout of kind 'experiment' (an experiment) cannot be imported: experiments are not supported",
      });
      expect((await f.call('GET', '/api/flags/ld-fresh', as(owner))).status).toBe(404);
      expect((await f.call('GET', '/api/flags/ld-parent', as(owner))).body.enabled).toBe(true);
      expect((await f.call('GET', '/api/flags/ld-parent/audit', as(owner))).body).toHaveLength(auditBefore);
    });

    it('imports LaunchDarkly segments beside the flags in one request; one bad segment refuses the whole import and writes nothing', async () => {
      const staging = { 'x-environment': 'staging' };
      const gated = (segmentKeys: string[]) => ({
        key: 'ld-gated',
        on: true,
        variations: [true, false],
        offVariation: 1,
        fallthrough: { variation: 1 },
        rules: [{ id: 'seg', clauses: [{ attribute: 'key', op: 'segmentMatch', values: segmentKeys }], variation: 0 }],
        salt: 'gated',
      });
      const segments = {
        'ld-beta': { key: 'ld-beta', included: ['u1'], excluded: [], rules: [], salt: 'beta', version: 4, deleted: false },
        'ld-orgs': { key: 'ld-orgs', includedContexts: [{ contextKind: 'organization', values: ['acme'] }], rules: [{ id: 'pro', clauses: [{ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['pro'] }], weight: 100000 }], version: 1 },
      };
      const refused = await importAs(owner, { flags: { 'ld-gated': gated(['ld-beta', 'ld-orgs']) }, segments: { ...segments, 'ld-big': { key: 'ld-big', unbounded: true, version: 1 } } }, staging);
      expect([refused.status, refused.body.errors]).toEqual([422, { 'segments.ld-big.unbounded': 'a big segment (its members live outside the segment) cannot be imported' }]);
      expect((await f.call('GET', '/api/segments/ld-beta', as(owner, staging))).status).toBe(404);
      expect((await f.call('GET', '/api/flags/ld-gated', as(owner, staging))).status).toBe(404);

      const res = await importAs(owner, { flags: { 'ld-gated': gated(['ld-beta', 'ld-orgs']) }, segments }, staging);
      expect([res.status, res.body.created, res.body.segments]).toEqual([200, ['ld-gated'], { created: ['ld-beta', 'ld-orgs'], replaced: [] }]);
      expect((await f.call('GET', '/api/segments/ld-orgs', as(owner, staging))).body).toMatchObject({ includedContexts: [{ contextKind: 'organization', values: ['acme'] }], salt: '' });
      expect((await f.call('GET', '/api/segments/ld-beta/audit', as(owner, staging))).body.map((a: { action: string }) => a.action)).toEqual(['import']);
      // The seed's evaluate route resolves the imported segments.
      const evaluate = async (userId: string) => (await f.call('POST', '/api/flags/ld-gated/evaluate', { ...as(owner, staging), json: { userId } })).body;
      expect(await evaluate('u1')).toMatchObject({ value: true, reason: 'RULE_MATCH', ruleId: 'seg' });
      expect(await evaluate('u2')).toMatchObject({ value: false, reason: 'FALLTHROUGH' });
      // A stored segment may be named by a later import; one stored only in another environment may not.
      const later = await importAs(owner, { flags: { 'ld-later': { ...gated(['ld-beta']), key: 'ld-later' } } }, staging);
      expect([later.status, later.body.segments]).toEqual([200, { created: [], replaced: [] }]);
      const elsewhere = await importAs(owner, { flags: { 'ld-later': { ...gated(['ld-beta']), key: 'ld-later' } } });
      expect([elsewhere.status, elsewhere.body.errors]).toEqual([422, { 'flags.ld-later.rules[0].clauses[0].values[0]': 'names no segment of this import or this environment ("ld-beta")' }]);
      // In use by the imported flags: the segment cannot be deleted.
      expect((await f.call('DELETE', '/api/segments/ld-beta', as(owner, staging))).status).toBe(409);
    });

    it('refuses what cannot be evaluated: unknown operators and variations, a rule naming none, cycles, mixed types', async () => {
      const flag = (key: string, extra: object) => ({ key, on: true, variations: [true, false], offVariation: 1, fallthrough: { variation: 0 }, salt: key, ...extra });
      const res = await importAs(owner, {
        flags: {
          a: flag('a', { rules: [{ id: 'r', clauses: [{ attribute: 'x', op: 'oneOf', values: [1] }], variation: 0 }], prerequisites: [{ key: 'b', variation: 0 }] }),
          b: flag('b', { prerequisites: [{ key: 'a', variation: 0 }], targets: [{ values: ['k'], variation: 7 }] }),
          c: flag('c', { rules: [{ id: 'r', clauses: [] }], prerequisites: [{ key: 'nowhere', variation: 0 }] }),
          d: flag('d', { variations: [1, 'one'] }),
          e: flag('e', { fallthrough: {}, offVariation: 5, rules: [{ id: 'r', clauses: [{ attribute: 'anonymous', contextKind: 'multi', op: 'in', values: [true] }], variation: 0 }] }),
        },
      });
      expect(res.status).toBe(422);
      expect(res.body.errors).toMatchObject({
        'flags.a.rules[0].clauses[0].op': "unknown operator 'oneOf'",
        'flags.b.targets[0].variation': 'names no variation of this flag (7; it has 2)',
        'flags.c.rules[0]': 'names no variation and no rollout',
        'flags.c.prerequisites[0].key': "names flag 'nowhere', which is neither in this import nor in this environment",
        'flags.d.variations': 'must mix number and string values: our flags have one type',
        'flags.e.fallthrough': 'names no variation and no rollout',
        'flags.e.offVariation': 'names no variation of this flag (5; it has 2)',
        'flags.e.rules[0].clauses[0].contextKind': "'multi' is not a context kind",
      });
      const cycle = await importAs(owner, { flags: { a: flag('a', { prerequisites: [{ key: 'b', variation: 0 }] }), b: flag('b', { prerequisites: [{ key: 'a', variation: 0 }] }) } });
      expect(cycle.status).toBe(422);
      expect(cycle.body.errors['flags.a.prerequisites[0].key']).toMatch(/prerequisite cycle: a -> b -> a/);
      expect((await f.call('GET', '/api/flags/a', as(owner))).status).toBe(404);
    });

    it('answers bad input with a clear 4xx problem and writes nothing', async () => {
      const cases: Array<[unknown, number, Record<string, string> | undefined]> = [
        // A top-level JSON string is refused by the strict JSON body parser already.
        ['just text', 400, undefined],
        [{ flags: 5 }, 422, { flags: 'must be an object of flag key to flag, or an array of flags' }],
        [{ flag: {} }, 422, { flag: 'is not an allowed field', flags: 'is required: an object of flag key to flag, or an array of flags' }],
        [[1, null], 422, { '[0]': 'must be a flag object', '[1]': 'must be a flag object' }],
        [{ flags: [{ key: 'ok' }, 'x'] }, 422, { 'flags[1]': 'must be a flag object' }],
        // Postgres refuses NUL and unpaired surrogates: refused up front, never a 500 at write time.
        [{ flags: { n: { variations: ['a', 'b'], fallthrough: { variation: 0 }, rules: [{ clauses: [{ attribute: 'x', op: 'in', values: ['nul\u0000'] }], variation: 0 }] } } }, 422, { 'flags.n.rules[0].clauses[0].values[0]': 'must not hold NUL characters or unpaired surrogates' }],
        [{ flags: { n: { variations: ['\udc00'], fallthrough: { variation: 0 } } } }, 422, { 'flags.n.variations[0]': 'must not hold NUL characters or unpaired surrogates' }],
        [{ flags: { 'bad key': { on: true } } }, 422, undefined],
        [{ flags: { x: { key: 'y', variations: [true] } } }, 422, { 'flags.x.key': "differs from the key it is listed under ('x')" }],
        [{ flags: { export: { variations: [true], fallthrough: { variation: 0 } } } }, 422, { 'flags.export.key': "export is reserved by the API's paths" }],
        [{ flags: { z: { variations: [true, false], fallthrough: { variation: 0 }, on: 'yes', surprise: 1 } } }, 422, { 'flags.z.on': 'must be a boolean', 'flags.z.surprise': expect.stringMatching(/^is not a field/) as unknown as string }],
      ];
      for (const [json, status, errors] of cases) {
        const res = await importAs(owner, json);
        expect([JSON.stringify(json), res.status, res.headers.get('content-type')]).toEqual([JSON.stringify(json), status, 'application/problem+json; charset=utf-8']);
        if (errors) expect(res.body.errors).toEqual(errors);
      }
      const notJson = await http(`${f.url}/api/flags/import`, { method: 'POST', headers: { authorization: `Bearer ${owner.idToken}`, 'x-tenant-id': owner.tenantId, 'content-type': 'text/plain' }, body: 'flags' });
      expect(notJson.status).toBe(415);
      const broken = await http(`${f.url}/api/flags/import`, { method: 'POST', headers: { authorization: `Bearer ${owner.idToken}`, 'x-tenant-id': owner.tenantId, 'content-type': 'application/json' }, body: '{"flags": {' });
      expect(broken.status).toBe(400);
      expect((await f.call('GET', '/api/flags/y', as(owner))).status).toBe(404);
    });

    it('honours Idempotency-Key: the same request replays, another body with the key is 422', async () => {
      const data = { flags: { 'ld-once': { key: 'ld-once', on: true, variations: ['a', 'b'], offVariation: 0, fallthrough: { variation: 1 }, salt: 'x' } } };
      const key = { 'idempotency-key': 'import-ld-once-1' };
      const first = await importAs(owner, data, key);
      const again = await importAs(owner, data, key);
      expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true']);
      expect(again.body).toEqual(first.body);
      expect((await f.call('GET', '/api/flags/ld-once/audit', as(owner))).body).toHaveLength(1);
      const other = await importAs(owner, { flags: { 'ld-once': { ...data.flags['ld-once'], on: false } } }, key);
      expect([other.status, other.body.type]).toEqual([422, '/problems/idempotency-key-reused']);
      expect((await f.call('GET', '/api/flags/ld-once', as(owner))).body.enabled).toBe(true);
    });

    it('concurrent imports of one new key: each is applied whole or answered 409 (one import per tenant at a time), never a 500', async () => {
      const data = { flags: { 'ld-race': { key: 'ld-race', on: true, variations: [1, 2], offVariation: 0, fallthrough: { variation: 1 }, salt: 'r' } } };
      const results = await Promise.all(Array.from({ length: 6 }, () => importAs(owner, data)));
      const statuses = results.map((r) => r.status);
      expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
      for (const r of results.filter((x) => x.status === 409)) expect(['/problems/flag-exists', '/problems/import-in-progress']).toContain(r.body.type);
      const audit = (await f.call('GET', '/api/flags/ld-race/audit', as(owner))).body;
      expect(audit).toHaveLength(statuses.filter((s) => s === 200).length);
      expect(audit.filter((a: { changes: { created: boolean } }) => a.changes.created)).toHaveLength(1);
    });

    it('keeps tenants apart and needs the editor role or flags:write', async () => {
      const data = { flags: { 'ld-intruder': { key: 'ld-intruder', on: true, variations: [true], fallthrough: { variation: 0 } } } };
      const foreign = await f.call('POST', '/api/flags/import', { token: stranger.idToken, tenant: owner.tenantId, json: data });
      expect(foreign.status).toBe(403);
      // The stranger's own tenant is where their import lands; the owner never sees it.
      expect((await importAs(stranger, data)).status).toBe(200);
      expect((await f.call('GET', '/api/flags/ld-intruder', as(owner))).status).toBe(404);

      const viewer = { ...(await f.addMember(owner, owner.tenantId, 'import-viewer@flagship.test', 'viewer')), tenantId: owner.tenantId };
      const denied = await importAs(viewer, data);
      expect([denied.status, denied.body.type]).toEqual([403, '/problems/role-required']);
      expect((await f.call('POST', '/api/flags/import', { json: data })).status).toBe(401);

      const token = async (scopes: string[]) => {
        const client = (await f.call('POST', '/api/oauth/clients', { ...as(owner), json: { name: `importer ${scopes.join(' ')}`, scopes } })).body;
        const res = await http(`${f.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }).toString(),
        });
        return (res.body as { access_token: string }).access_token;
      };
      const reader = await token(['flags:read']);
      expect((await f.call('POST', '/api/flags/import', { token: reader, json: data })).status).toBe(403);
      const writer = await token(['flags:write']);
      const byClient = await f.call('POST', '/api/flags/import', { token: writer, json: data });
      expect([byClient.status, byClient.body.created]).toEqual([200, ['ld-intruder']]);
      expect((await f.call('GET', '/api/flags/ld-intruder/audit', as(owner))).body[0].actor).toMatch(/^client:/);
    });
  });
});
