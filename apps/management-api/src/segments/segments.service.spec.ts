import type { DomainEvent } from '../webhooks/webhook-events';
import { ProblemException } from '@flagship/problem-details';
import type { Clause, SegmentDefinition } from '@flagship/flag-evaluation';
import { EnvironmentProblems } from '../environments/environments.errors';
import { ALICE, ENVIRONMENTS, OTHER_TENANT, TENANT } from '../flags/flag-services.fixture';
import { Quotas, type QuotaSettings } from '../quotas/quotas';
import { FakeQuotasRepository } from '../quotas/quotas.repository.fake';
import { problemOf } from '../testing/problem-of';
import { segmentEtag } from './segment-rules';
import type { CreateSegmentDto } from './segments.dto';
import { SegmentsRepository } from './segments.repository';
import { FakeSegmentsRepository } from './segments.repository.fake';
import { SegmentsService } from './segments.service';

interface Settings {
  QUOTA_SEGMENTS_PER_TENANT: number;
  QUOTA_SEGMENT_BYTES_PER_TENANT: number;
  SEGMENT_MAX_BYTES: number;
  SEGMENT_MAX_KEYS: number;
}

/** SegmentsService over the in-memory repository, the real Quotas over it, and the change feed recorded. */
function segmentServices(settings: Partial<Settings> = {}) {
  const s: Settings = { QUOTA_SEGMENTS_PER_TENANT: 500, QUOTA_SEGMENT_BYTES_PER_TENANT: 8_388_608, SEGMENT_MAX_BYTES: 524_288, SEGMENT_MAX_KEYS: 10_000, ...settings };
  const repo = new FakeSegmentsRepository();
  const quotas = new Quotas(
    s as unknown as QuotaSettings,
    new FakeQuotasRepository({ 'segments-per-tenant': (t) => repo.countSegments(t), 'segment-bytes-per-tenant': (t) => repo.countBytes(t) }),
    repo.transactions,
  );
  const announced: Array<[string, string, string, number]> = [];
  const events = { segmentChanged: async (t: string, e: string, k: string, v: number) => void announced.push([t, e, k, v]) };
  const environments = {
    resolve: async (_tenantId: string, requested: string | undefined) => {
      const key = requested ?? 'production';
      if (!ENVIRONMENTS.includes(key)) throw new ProblemException(EnvironmentProblems['environment-not-found'], `No environment "${key}" in this tenant.`);
      return key;
    },
  };
  const recorded: DomainEvent[] = [];
  const domainEvents = { record: async (_m: unknown, _tenantId: string, ...e: DomainEvent[]) => void recorded.push(...e) };
  const service = new SegmentsService(repo.transactions, repo, environments, quotas, events, s, domainEvents);
  return { repo, service, announced, recorded };
}

const segment = (key: string, more: Partial<CreateSegmentDto> = {}): CreateSegmentDto => ({ key, name: `Segment ${key}`, ...more });
const matching = (...keys: string[]): Clause => ({ attribute: '', op: 'segmentMatch', values: keys });

describe('SegmentsService', () => {
  let s: ReturnType<typeof segmentServices>;
  beforeEach(() => {
    s = segmentServices();
  });
  const create = (dto: CreateSegmentDto, env?: string) => s.service.create(TENANT, env, ALICE, dto);

  it('the fake is a repository', () => {
    expect(s.repo).toBeInstanceOf(SegmentsRepository);
  });

  describe('create and read', () => {
    it('writes the segment in the request’s environment only, with empty lists for what was not sent, audited and announced', async () => {
      const { row, warnings } = await create(segment('beta', { included: ['u1'], includedContexts: [{ contextKind: 'organization', values: ['acme'] }] }), 'staging');
      expect([row.environment, row.version, row.definition]).toEqual(['staging', 1, { included: ['u1'], excluded: [], includedContexts: [{ contextKind: 'organization', values: ['acme'] }], excludedContexts: [], rules: [] }]);
      expect(warnings).toEqual([]);
      expect((await s.service.get(TENANT, 'staging', 'beta')).row.key).toBe('beta');
      expect((await problemOf(s.service.get(TENANT, 'production', 'beta'))).problem.slug).toBe('segment-not-found');
      expect((await problemOf(s.service.get(OTHER_TENANT, 'staging', 'beta'))).problem.slug).toBe('segment-not-found');
      expect((await s.service.auditTrail(TENANT, 'staging', 'beta')).map((a) => [a.action, a.actor, a.changes])).toEqual([
        ['create', 'user:alice', { key: 'beta', name: 'Segment beta', included: ['u1'], includedContexts: [{ contextKind: 'organization', values: ['acme'] }] }],
      ]);
      expect(s.announced).toEqual([[TENANT, 'staging', 'beta', 1]]);
    });

    it('refuses a key taken in the environment (409 segment-exists), writing nothing; another environment may take it', async () => {
      await create(segment('beta'));
      const refused = await problemOf(create(segment('beta', { included: ['x'] })));
      expect([refused.problem.status, refused.problem.slug]).toEqual([409, 'segment-exists']);
      expect((await s.service.auditTrail(TENANT, undefined, 'beta')).map((a) => a.action)).toEqual(['create']);
      await create(segment('beta'), 'development');
    });

    it('refuses an environment the tenant lacks (404)', async () => {
      expect((await problemOf(create(segment('beta'), 'nowhere'))).problem.slug).toBe('environment-not-found');
    });

    it('refuses a malformed body with 422 naming each path, unknown fields included, and reports warnings of what can never match', async () => {
      const bad = await problemOf(
        create(
          segment('bad', {
            included: ['ok', ''],
            includedContexts: [{ contextKind: '', values: ['a'], bogus: 1 } as never],
            rules: [{ id: 'r', clauses: [], weight: 100001, extra: true } as never],
          }),
        ),
      );
      expect(bad.problem.status).toBe(422);
      expect(bad.extensions['errors']).toEqual({
        'included[1]': 'must be a non-empty string',
        'includedContexts[0].bogus': 'is not an allowed field',
        'includedContexts[0].contextKind': "must be a context kind (letters, digits, '.', '_' and '-'; not 'kind' or 'multi'), or absent for 'user'",
        'rules[0].extra': 'is not an allowed field',
        'rules[0].weight': 'must be an integer from 0 to 100000',
      });
      expect(s.repo.countSegments(TENANT)).toBe(0);
      const { warnings } = await create(segment('warned', { rules: [{ id: 'r', clauses: [{ attribute: 'age', op: 'lessThan', values: ['ten'] }] }] }));
      expect(warnings).toEqual([{ path: 'rules[0].clauses[0].values[0]', message: expect.stringContaining('never matches') }]);
    });

    it('lists the environment’s segments oldest first, a page at a time', async () => {
      for (const key of ['a', 'b', 'c']) await create(segment(key));
      await create(segment('elsewhere'), 'staging');
      const first = await s.service.list(TENANT, undefined, 2);
      expect(first.map((v) => v.row.key)).toEqual(['a', 'b', 'c']);
      expect((await s.service.list(OTHER_TENANT, undefined, 10)).map((v) => v.row.key)).toEqual([]);
    });
  });

  describe('bounds', () => {
    it('counts segments of every environment against QUOTA_SEGMENTS_PER_TENANT (409 quota-exceeded); other tenants are not counted', async () => {
      s = segmentServices({ QUOTA_SEGMENTS_PER_TENANT: 2 });
      await create(segment('a'));
      await create(segment('a'), 'staging');
      const refused = await problemOf(create(segment('c')));
      expect([refused.problem.slug, refused.extensions]).toEqual(['quota-exceeded', { quota: 'segments-per-tenant', limit: 2, current: 2 }]);
      await s.service.create(OTHER_TENANT, undefined, ALICE, segment('c'));
    });

    it('refuses a segment listing more than SEGMENT_MAX_KEYS keys (every list and kind counted), at its longest list', async () => {
      s = segmentServices({ SEGMENT_MAX_KEYS: 5 });
      await create(segment('five', { included: ['a', 'b'], excluded: ['c'], includedContexts: [{ contextKind: 'org', values: ['d'] }], excludedContexts: [{ contextKind: 'org', values: ['e'] }] }));
      const refused = await problemOf(create(segment('six', { included: ['a'], excludedContexts: [{ contextKind: 'org', values: ['b', 'c'] }, { contextKind: 'device', values: ['d', 'e', 'f'] }] })));
      expect(refused.extensions['errors']).toEqual({ 'excludedContexts[1].values': 'the segment would list 6 context keys; a segment may list at most 5 (included and excluded, every kind together)' });
      const grown = await problemOf(s.service.update(TENANT, undefined, ALICE, 'five', { included: ['a', 'b', 'x'] }));
      expect(Object.keys(grown.extensions['errors'] as object)).toEqual(['included']);
    });

    it('refuses a definition over SEGMENT_MAX_BYTES (422 at the largest field), and bytes past QUOTA_SEGMENT_BYTES_PER_TENANT (409)', async () => {
      s = segmentServices({ SEGMENT_MAX_BYTES: 200, QUOTA_SEGMENT_BYTES_PER_TENANT: 350 });
      const big = await problemOf(create(segment('big', { excluded: ['x'], included: Array.from({ length: 30 }, (_, i) => `user-${i}`) })));
      expect(big.extensions['errors']).toEqual({ included: expect.stringMatching(/^the segment's definition would take \d+ bytes; a segment may take at most 200 bytes$/) });
      await create(segment('one', { included: ['a'.repeat(80)] }));
      const over = await problemOf(create(segment('two', { included: ['b'.repeat(80)] })));
      expect([over.problem.slug, (over.extensions as { quota: string }).quota]).toEqual(['quota-exceeded', 'segment-bytes-per-tenant']);
      expect(s.repo.countSegments(TENANT)).toBe(1);
      // Shrinking gives bytes back: the second fits once the first is smaller.
      await s.service.update(TENANT, undefined, ALICE, 'one', { included: [] });
      await create(segment('two', { included: ['b'.repeat(80)] }));
    });
  });

  describe('update', () => {
    it('replaces the fields sent, keeps the others, bumps the version, audits from/to and announces', async () => {
      await create(segment('beta', { included: ['u1'], salt: 'pepper' }));
      const { row } = await s.service.update(TENANT, undefined, ALICE, 'beta', { name: 'Beta', rules: [{ id: 'r', clauses: [], weight: 5000 }], salt: null }, '"1"');
      expect([row.name, row.version, row.definition]).toEqual(['Beta', 2, { included: ['u1'], excluded: [], includedContexts: [], excludedContexts: [], rules: [{ id: 'r', clauses: [], weight: 5000 }] }]);
      expect((await s.service.auditTrail(TENANT, undefined, 'beta'))[1]).toMatchObject({
        action: 'update',
        changes: { name: { from: 'Segment beta', to: 'Beta' }, rules: { from: [], to: [{ id: 'r', clauses: [], weight: 5000 }] }, salt: { from: 'pepper', to: null } },
      });
      expect(s.announced.at(-1)).toEqual([TENANT, 'production', 'beta', 2]);
    });

    it('is 412 segment-changed for a stale If-Match, naming the current version; * and the current ETag pass; no If-Match passes as for flags', async () => {
      const { row } = await create(segment('beta'));
      await s.service.update(TENANT, undefined, ALICE, 'beta', { name: 'B2' }, segmentEtag(row));
      const stale = await problemOf(s.service.update(TENANT, undefined, ALICE, 'beta', { name: 'B3' }, '"1"'));
      expect([stale.problem.status, stale.extensions]).toEqual([412, { currentVersion: '"2"' }]);
      await s.service.update(TENANT, undefined, ALICE, 'beta', { name: 'B3' }, '*');
      expect((await s.service.update(TENANT, undefined, ALICE, 'beta', { name: 'B4' })).row.version).toBe(4);
    });

    it('is 404 for another tenant’s or environment’s segment, and writes nothing for an empty patch', async () => {
      await create(segment('beta'));
      expect((await problemOf(s.service.update(OTHER_TENANT, undefined, ALICE, 'beta', { name: 'x' }))).problem.slug).toBe('segment-not-found');
      expect((await problemOf(s.service.update(TENANT, 'staging', ALICE, 'beta', { name: 'x' }))).problem.slug).toBe('segment-not-found');
      expect((await s.service.update(TENANT, undefined, ALICE, 'beta', {})).row.version).toBe(1);
      expect(s.announced).toHaveLength(1);
    });

    it('refuses a change that leaves the segment malformed, writing nothing', async () => {
      await create(segment('beta'));
      const bad = await problemOf(s.service.update(TENANT, undefined, ALICE, 'beta', { rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'nope' as never, values: [] }] }] }));
      expect(Object.keys(bad.extensions['errors'] as object)).toEqual(['rules[0].clauses[0].op']);
      expect((await s.service.get(TENANT, undefined, 'beta')).row.version).toBe(1);
    });
  });

  describe('webhooks (segment.updated, recorded in the write)', () => {
    it('records a create, an update with its from/to and a delete, each with its environment and actor; nothing for a refused write', async () => {
      await create(segment('beta'), 'staging');
      await s.service.update(TENANT, 'staging', ALICE, 'beta', { name: 'Beta' });
      await problemOf(create(segment('beta'), 'staging'));
      await problemOf(s.service.update(TENANT, 'staging', ALICE, 'beta', { name: 'B3' }, '"1"'));
      await s.service.remove(TENANT, 'staging', ALICE, 'beta');
      expect(s.recorded.map((e) => [e.type, e.data['action'], e.data['environment'], e.data['actor']])).toEqual([
        ['segment.updated', 'create', 'staging', 'user:alice'],
        ['segment.updated', 'update', 'staging', 'user:alice'],
        ['segment.updated', 'delete', 'staging', 'user:alice'],
      ]);
      expect(s.recorded[1]!.data['changes']).toEqual({ name: { from: 'Segment beta', to: 'Beta' } });
    });
  });

  describe('segmentMatch inside a segment (checked against the environment’s segments)', () => {
    it('create: a segment the environment does not have is 422 naming the value; one it has is taken', async () => {
      await create(segment('inner'), 'staging');
      const missing = await problemOf(create(segment('outer', { rules: [{ id: 'r', clauses: [matching('inner')] }] })));
      expect(missing.extensions['errors']).toEqual({ 'rules[0].clauses[0].values[0]': "no segment 'inner' in this environment" });
      const { row } = await create(segment('outer', { rules: [{ id: 'r', clauses: [matching('inner')] }] }), 'staging');
      expect(row.definition.rules).toEqual([{ id: 'r', clauses: [matching('inner')] }]);
    });

    it('update: a change closing a cycle (directly or through another segment) is 422 and writes nothing', async () => {
      await create(segment('a'));
      await create(segment('b', { rules: [{ id: 'r', clauses: [matching('a')] }] }));
      await create(segment('c', { rules: [{ id: 'r', clauses: [matching('b')] }] }));
      const cycle = await problemOf(s.service.update(TENANT, undefined, ALICE, 'a', { rules: [{ id: 'r', clauses: [matching('c')] }] }));
      expect(cycle.problem.status).toBe(422);
      expect(Object.keys(cycle.extensions['errors'] as object)).toEqual(expect.arrayContaining([expect.stringMatching(/^rules/)]));
      expect(JSON.stringify(cycle.extensions['errors'])).toMatch(/cycle|itself/i);
      const self = await problemOf(s.service.update(TENANT, undefined, ALICE, 'a', { rules: [{ id: 'r', clauses: [matching('a')] }] }));
      expect(self.problem.status).toBe(422);
      expect((await s.service.get(TENANT, undefined, 'a')).row).toMatchObject({ version: 1, definition: { rules: [] } });
    });
  });

  describe('importWithin (the segments of a LaunchDarkly import, in its transaction)', () => {
    const imported = (key: string, more: Partial<SegmentDefinition> = {}): SegmentDefinition => ({ key, name: key, included: [], excluded: [], includedContexts: [], excludedContexts: [], rules: [], ...more });
    const importing = (segments: SegmentDefinition[], env = 'production') => s.repo.transactions.run((m) => s.service.importWithin(m, TENANT, env, 'user:alice', segments));

    it('creates new keys and replaces existing ones of the environment, audits each as import, and announces only once committed', async () => {
      await create(segment('old', { included: ['a'] }));
      const announcedBefore = s.announced.length;
      const result = await importing([imported('new', { salt: 's', rules: [{ id: 'r', clauses: [], weight: 100 }] }), imported('old', { excluded: ['b'] })]);
      expect(result).toEqual({ created: ['new'], replaced: ['old'] });
      expect((await s.service.get(TENANT, undefined, 'old')).row).toMatchObject({ version: 2, definition: { included: [], excluded: ['b'] } });
      expect((await s.service.get(TENANT, undefined, 'new')).row).toMatchObject({ version: 1, definition: { salt: 's', rules: [{ id: 'r', clauses: [], weight: 100 }] } });
      expect((await s.service.auditTrail(TENANT, undefined, 'old')).map((a) => a.action)).toEqual(['create', 'import']);
      expect(s.announced.slice(announcedBefore)).toEqual([
        [TENANT, 'production', 'new', 1],
        [TENANT, 'production', 'old', 2],
      ]);
    });

    it('writes nothing and announces nothing when the import’s transaction fails after it (all or nothing with the flags)', async () => {
      const failed = await s.repo.transactions
        .run(async (m) => {
          await s.service.importWithin(m, TENANT, 'production', 'user:alice', [imported('a')]);
          throw new Error('a flag of the import was refused');
        })
        .catch((e: Error) => e.message);
      expect(failed).toBe('a flag of the import was refused');
      expect(s.repo.countSegments(TENANT)).toBe(0);
      expect(s.announced).toEqual([]);
    });

    it('refuses with 422 keyed segments.<key>.<path>: malformed ones, bad keys, keys twice, and the bounds', async () => {
      s = segmentServices({ SEGMENT_MAX_KEYS: 2 });
      const refused = await problemOf(importing([imported('ok'), imported('bad', { rules: [{ id: 'r', clauses: [], weight: -1 }] }), imported('-x'), imported('ok'), imported('many', { included: ['a', 'b', 'c'] })]));
      expect(refused.extensions['errors']).toEqual({
        'segments.bad.rules[0].weight': 'must be an integer from 0 to 100000',
        'segments.-x.key': expect.stringContaining('must start with a letter or digit'),
        'segments.ok': 'appears more than once in the import',
        'segments.many.included': expect.stringContaining('at most 2'),
      });
      expect(s.repo.countSegments(TENANT)).toBe(0);
    });

    it('counts the new segments together against the quota and the bytes added against the byte quota, naming the largest', async () => {
      s = segmentServices({ QUOTA_SEGMENTS_PER_TENANT: 2 });
      await create(segment('old'));
      expect((await problemOf(importing([imported('old'), imported('n1'), imported('n2')]))).extensions).toEqual({ quota: 'segments-per-tenant', limit: 2, current: 1 });
      expect(await importing([imported('old'), imported('n1')])).toEqual({ created: ['n1'], replaced: ['old'] });
      s = segmentServices({ QUOTA_SEGMENT_BYTES_PER_TENANT: 400 });
      const bytes = await problemOf(importing([imported('big', { included: ['x'.repeat(300)] }), imported('small', { included: ['y'.repeat(100)] })]));
      expect(bytes.extensions).toMatchObject({ quota: 'segment-bytes-per-tenant', limit: 400, adds: { big: expect.any(Number), small: expect.any(Number) } });
      expect(Object.keys(bytes.extensions['adds'] as object)).toEqual(['big', 'small']);
      expect(s.repo.countSegments(TENANT)).toBe(0);
    });
  });

  describe('delete', () => {
    it('deletes, audits and announces; then it is 404', async () => {
      await create(segment('beta'));
      await s.service.remove(TENANT, undefined, ALICE, 'beta');
      expect((await problemOf(s.service.get(TENANT, undefined, 'beta'))).problem.slug).toBe('segment-not-found');
      expect((await s.service.auditTrail(TENANT, undefined, 'beta')).map((a) => a.action)).toEqual(['create', 'delete']);
      expect(s.announced.at(-1)).toEqual([TENANT, 'production', 'beta', 0]);
      expect((await problemOf(s.service.remove(TENANT, undefined, ALICE, 'beta'))).problem.slug).toBe('segment-not-found');
    });

    it('is 409 segment-in-use naming the flags of this environment that use it through segmentMatch, and nesting segments', async () => {
      await create(segment('beta'));
      s.repo.useFlag(TENANT, 'production', 'checkout', [{ clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }, matching('other', 'beta')] }]);
      s.repo.useFlag(TENANT, 'production', 'banner', [{ clauses: [] }, { clauses: [matching('beta')] }]);
      s.repo.useFlag(TENANT, 'staging', 'elsewhere', [{ clauses: [matching('beta')] }]);
      await s.repo.transactions.run((m) =>
        s.repo.insert(m, TENANT, 'production', { key: 'outer', name: 'o', description: '', definition: { included: [], excluded: [], includedContexts: [], excludedContexts: [], rules: [{ id: 'r', clauses: [matching('beta')] }] }, definitionBytes: 0 }),
      );
      const refused = await problemOf(s.service.remove(TENANT, undefined, ALICE, 'beta'));
      expect([refused.problem.status, refused.problem.slug, refused.extensions]).toEqual([409, 'segment-in-use', { flags: ['banner', 'checkout'], segments: ['outer'] }]);
      expect(refused.detail).toBe('flags banner, checkout and segments outer use segment beta through segmentMatch in this environment; remove those clauses first.');
      expect((await s.service.get(TENANT, undefined, 'beta')).row.key).toBe('beta');
    });
  });
});
