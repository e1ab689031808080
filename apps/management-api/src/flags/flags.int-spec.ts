import Redis from 'ioredis';
import { waitFor } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

describe('flags (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let stranger: SignedUp;
  const as = (u: SignedUp, extra: { tenant?: string; headers?: Record<string, string> } = {}) => ({ token: u.idToken, tenant: extra.tenant ?? u.tenantId, headers: extra.headers });

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    owner = await f.signUp();
    stranger = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  const create = (json: unknown, u = owner, headers?: Record<string, string>) => f.call('POST', '/api/flags', { ...as(u, { headers }), json });

  it('creates a flag with the seed\'s fields, default variations and an ETag', async () => {
    const res = await create({ key: 'new-checkout', name: 'New checkout', type: 'boolean', defaultValue: false, description: 'd', tags: ['web'] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.any(String),
      key: 'new-checkout',
      name: 'New checkout',
      type: 'boolean',
      enabled: false,
      defaultValue: false,
      description: 'd',
      tags: ['web'],
      projectId: null,
      environment: 'production',
      rules: [],
      targets: [],
      prerequisites: [],
    });
    expect(res.body.variations.map((v: { value: unknown }) => v.value)).toEqual([true, false]);
    expect(res.headers.get('etag')).toBe('"1.1"');
    const got = await f.call('GET', '/api/flags/new-checkout', as(owner));
    expect([got.status, got.headers.get('etag'), got.body.key]).toEqual([200, '"1.1"', 'new-checkout']);
  });

  it('409 for a duplicate key, 422 for bad keys, types and fields', async () => {
    expect((await create({ key: 'new-checkout', name: 'x', type: 'boolean', defaultValue: true })).status).toBe(409);
    const bad = await create({ key: '-bad key', name: '', type: 'colour', defaultValue: 1, extra: true });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors).sort()).toEqual(['extra', 'key', 'name', 'type']);
    const wrongDefault = await create({ key: 'n1', name: 'n', type: 'number', defaultValue: '5' });
    expect(wrongDefault.body.errors).toEqual({ defaultValue: 'must be a number' });
    const wrongVariation = await create({ key: 'n2', name: 'n', type: 'string', defaultValue: 'a', flag_variations: [{ name: 'a', value: 'a' }, { name: 'b', value: 2 }] });
    expect(wrongVariation.body.errors).toEqual({ 'flag_variations[1].value': 'must be a string' });
    expect((await create({ key: 'export', name: 'n', type: 'boolean', defaultValue: true })).body.errors).toEqual({ key: 'export is reserved by the API\'s paths' });
    expect((await create({ key: 'x'.repeat(129), name: 'n', type: 'boolean', defaultValue: true })).status).toBe(422);
  });

  it('requires X-Tenant-ID from users on list, create and read; 404 for an unknown environment', async () => {
    const noHeader = await f.call('GET', '/api/flags', { token: owner.idToken });
    expect([noHeader.status, noHeader.body.type]).toEqual([400, '/problems/tenant-header-required']);
    const unknownEnv = await f.call('GET', '/api/flags', as(owner, { headers: { 'x-environment': 'moon' } }));
    expect([unknownEnv.status, unknownEnv.body.type]).toEqual([404, '/problems/environment-not-found']);
    const list = await f.call('GET', '/api/flags', as(owner));
    expect(list.status).toBe(200);
    expect(list.body.map((x: { key: string }) => x.key)).toContain('new-checkout');
  });

  it('keeps tenants apart: a stranger sees and changes nothing', async () => {
    expect((await f.call('GET', '/api/flags/new-checkout', as(stranger))).status).toBe(404);
    expect((await f.call('GET', '/api/flags/new-checkout', as(stranger, { tenant: owner.tenantId }))).status).toBe(403);
    expect((await f.call('PATCH', '/api/flags/new-checkout', { ...as(stranger, { tenant: owner.tenantId }), json: { enabled: true } })).status).toBe(403);
    expect((await f.call('DELETE', '/api/flags/new-checkout', as(stranger, { tenant: owner.tenantId }))).status).toBe(403);
    expect((await f.call('POST', '/api/flags/new-checkout/evaluate', { ...as(stranger, { tenant: owner.tenantId }), json: { userId: 'u' } })).status).toBe(403);
    expect((await f.call('GET', '/api/flags', as(stranger))).body).toEqual([]);
  });

  it('a viewer reads and evaluates but cannot write; an editor writes', async () => {
    const viewer = { ...(await f.addMember(owner, owner.tenantId, 'viewer@flagship.test', 'viewer')), tenantId: owner.tenantId };
    const editor = { ...(await f.addMember(owner, owner.tenantId, 'editor@flagship.test', 'editor')), tenantId: owner.tenantId };
    expect((await f.call('GET', '/api/flags/new-checkout', as(viewer))).status).toBe(200);
    expect((await f.call('POST', '/api/flags/new-checkout/evaluate', { ...as(viewer), json: { userId: 'u1' } })).status).toBe(200);
    const denied = await create({ key: 'by-viewer', name: 'v', type: 'boolean', defaultValue: true }, viewer);
    expect([denied.status, denied.body.type]).toEqual([403, '/problems/role-required']);
    expect((await f.call('PATCH', '/api/flags/new-checkout', { ...as(viewer), json: { name: 'x' } })).status).toBe(403);
    expect((await create({ key: 'by-editor', name: 'e', type: 'boolean', defaultValue: true }, editor)).status).toBe(201);
    expect((await f.call('DELETE', '/api/flags/by-editor', as(editor))).status).toBe(204);
  });

  it('PATCH edits targeting per environment, validates rules, and honours If-Match', async () => {
    const flag = (await f.call('GET', '/api/flags/new-checkout', as(owner))).body;
    const [on, off] = flag.variations.map((v: { id: string }) => v.id);
    const bad = await f.call('PATCH', '/api/flags/new-checkout', {
      ...as(owner),
      json: { rules: [{ id: 'r1', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: 'nope' }] },
    });
    expect(bad.status).toBe(422);
    expect(Object.keys(bad.body.errors)[0]).toMatch(/^rules\[0\]/);
    const patched = await f.call('PATCH', '/api/flags/new-checkout', {
      ...as(owner, { headers: { 'if-match': '"1.1"' } }),
      json: {
        enabled: true,
        targets: [{ variationId: off, values: ['blocked-user'] }],
        rules: [{ id: 'norway', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: on }],
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabled: true, environment: 'production' });
    expect(patched.headers.get('etag')).toBe('"1.2"');
    const stale = await f.call('PATCH', '/api/flags/new-checkout', { ...as(owner, { headers: { 'if-match': '"1.1"' } }), json: { name: 'stale' } });
    expect([stale.status, stale.body.type]).toEqual([412, '/problems/flag-changed']);
    const staging = await f.call('GET', '/api/flags/new-checkout', as(owner, { headers: { 'x-environment': 'staging' } }));
    expect([staging.body.enabled, staging.body.rules]).toEqual([false, []]);
    const audit = await f.call('GET', '/api/flags/new-checkout/audit', as(owner));
    expect(audit.body.map((a: { action: string }) => a.action)).toEqual(['create', 'update']);
    expect(audit.body[1]).toMatchObject({ actor: `user:${owner.userId}`, environment: 'production', changes: { enabled: { from: false, to: true } } });
  });

  // Issue 33: PATCH once stored targets[].contextKind and targets[].bogusField and ignored both, so a
  // target meant for an organization served the user of the same key.
  it('PATCH refuses an unknown field inside a target by its path and writes nothing; a target of another kind serves that kind only', async () => {
    const created = await create({ key: 'kind-targets', name: 'k', type: 'boolean', defaultValue: false, enabled: true });
    const on = (created.body.variations as Array<{ id: string; value: unknown }>).find((v) => v.value === true)!.id;
    const patch = (json: unknown) => f.call('PATCH', '/api/flags/kind-targets', { ...as(owner), json });
    const bogus = await patch({ targets: [{ variationId: on, values: ['acme'], contextKind: 'organization', bogusField: true }] });
    expect([bogus.status, bogus.body.errors]).toEqual([422, { 'targets[0].bogusField': 'is not an allowed field' }]);
    const after = await f.call('GET', '/api/flags/kind-targets', as(owner));
    expect([after.headers.get('etag'), after.body.targets]).toEqual([created.headers.get('etag'), []]);

    expect((await patch({ targets: [{ variationId: on, values: ['acme'], contextKind: 'organization' }] })).status).toBe(200);
    const ev = (json: unknown) => f.call('POST', '/api/flags/kind-targets/evaluate', { ...as(owner), json }).then((r) => r.body);
    expect(await ev({ userId: 'acme' })).toMatchObject({ value: false, reason: 'FALLTHROUGH' });
    expect(await ev({ context: { kind: 'organization', key: 'acme' } })).toMatchObject({ value: true, reason: 'TARGET_MATCH' });
    expect(await ev({ context: { kind: 'multi', user: { key: 'u-1' }, organization: { key: 'acme' } } })).toMatchObject({ value: true, reason: 'TARGET_MATCH' });
  });

  it('PATCH leaves the off value and salt alone unless it sends them (null resets them)', async () => {
    const created = await create({ key: 'kept-fields', name: 'k', type: 'string', defaultValue: 'a', flag_variations: [{ name: 'a', value: 'a' }, { name: 'b', value: 'b' }] });
    expect(created.status).toBe(201);
    const patch = (json: unknown) => f.call('PATCH', '/api/flags/kept-fields', { ...as(owner), json });
    expect((await patch({ offValue: 'b', salt: 'saltyA' })).body).toMatchObject({ offValue: 'b', salt: 'saltyA' });
    expect((await patch({ enabled: true })).body).toMatchObject({ enabled: true, offValue: 'b', salt: 'saltyA' });
    expect((await patch({ rules: [] })).body).toMatchObject({ offValue: 'b', salt: 'saltyA' });
    expect((await patch({ offValue: null })).body).toMatchObject({ offValue: null, salt: 'saltyA' });
    const audit = (await f.call('GET', '/api/flags/kept-fields/audit', as(owner))).body as Array<{ changes: Record<string, unknown> }>;
    expect(audit.slice(1).map((a) => Object.keys(a.changes).sort())).toEqual([['offValue', 'salt'], ['enabled'], ['rules'], ['offValue']]);
  });

  it('evaluates with the seed\'s result and LaunchDarkly reasons', async () => {
    const ev = (json: unknown, flag = 'new-checkout', headers?: Record<string, string>) => f.call('POST', `/api/flags/${flag}/evaluate`, { ...as(owner, { headers }), json });
    const rule = await ev({ userId: 'u1', attributes: { country: 'NO' } });
    expect(rule.status).toBe(200);
    expect(rule.body).toMatchObject({ key: 'new-checkout', enabled: true, value: true, reason: 'RULE_MATCH', ruleId: 'norway', ruleIndex: 0 });
    expect((await ev({ userId: 'blocked-user', attributes: { country: 'NO' } })).body).toMatchObject({ value: false, reason: 'TARGET_MATCH' });
    expect((await ev({ userId: 'u2', attributes: { country: 'SE' } })).body).toMatchObject({ value: false, reason: 'FALLTHROUGH' });
    expect((await ev({ attributes: { country: 'NO' } })).body).toMatchObject({ reason: 'ERROR', errorKind: 'USER_NOT_SPECIFIED' });
    expect((await ev({ userId: 'u1', attributes: { country: 'NO' }, environment: 'staging' })).body).toMatchObject({ enabled: false, reason: 'OFF', value: false });
    expect((await ev({ userId: 'u1' }, 'no-such-flag')).status).toBe(404);
    expect((await ev({ userId: 5 })).status).toBe(422);
    expect((await ev({ userId: 'u', attributes: 'x' })).status).toBe(422);
  });

  it('announces every change on Redis and counts evaluations', async () => {
    const sub = new Redis(f.te.redis.url);
    const messages: unknown[] = [];
    await sub.subscribe(`${f.te.redis.prefix}ch:flag-changed`);
    sub.on('message', (_c, m) => messages.push(JSON.parse(m)));
    await f.call('PATCH', '/api/flags/new-checkout', { ...as(owner), json: { description: 'announced' } });
    await new Promise((r) => setTimeout(r, 200));
    sub.disconnect();
    expect(messages).toEqual(
      expect.arrayContaining(['development', 'production', 'staging'].map((environment) => ({ tenantId: owner.tenantId, environment, flagKey: 'new-checkout', version: 2 }))),
    );
    const redis = new Redis(f.te.redis.url);
    const count = Number(await redis.get(`${f.te.redis.prefix}t:${owner.tenantId}:evaluations`));
    redis.disconnect();
    expect(count).toBeGreaterThanOrEqual(6);
  });

  it("evaluates another replica's change once it is announced on Redis (the flag store follows the change feed)", async () => {
    await create({ key: 'other-replica', name: 'Other replica', type: 'boolean', defaultValue: false, enabled: true });
    const ev = async () => (await f.call('POST', '/api/flags/other-replica/evaluate', { ...as(owner), json: { userId: 'u1' } })).body;
    expect(await ev()).toMatchObject({ enabled: true, reason: 'FALLTHROUGH' });
    // Written as another replica would, behind this one's back: nothing seen until it is announced.
    await f.sql(
      `UPDATE flag_environments fe SET enabled = false, version = fe.version + 1, updated_at = clock_timestamp()
         FROM flags f WHERE f.id = fe.flag_id AND f.tenant_id = $1 AND f.key = 'other-replica' AND fe.environment_key = 'production'`,
      [owner.tenantId],
    );
    expect(await ev()).toMatchObject({ enabled: true });
    const publisher = new Redis(f.te.redis.url);
    await publisher.publish(`${f.te.redis.prefix}ch:flag-changed`, JSON.stringify({ tenantId: owner.tenantId, environment: 'production', flagKey: 'other-replica', version: 2 }));
    publisher.disconnect();
    await waitFor(async () => (await ev()).reason === 'OFF', 5000, 10);
  });

  it('creates flags in a project from flag_variations, counts them, and evaluates in the project', async () => {
    const project = await f.call('POST', '/api/projects', { ...as(owner), json: { name: 'Web', color: '#112233' } });
    expect(project.status).toBe(201);
    const pid = project.body.id;
    const res = await f.call('POST', `/api/flags/projects/${pid}/flags`, {
      ...as(owner),
      json: {
        key: 'banner-text',
        name: 'Banner',
        type: 'string',
        defaultValue: 'hello',
        description: 'copy test',
        flag_variations: [
          { name: 'a', value: 'hello', description: 'control' },
          { name: 'b', value: 'hej', description: 'variant' },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.projectId).toBe(pid);
    expect(res.body.variations.map((v: { name: string; value: string; description: string }) => [v.name, v.value, v.description])).toEqual([
      ['a', 'hello', 'control'],
      ['b', 'hej', 'variant'],
    ]);
    expect((await f.call('GET', `/api/projects/${pid}`, as(owner))).body.flagCount).toBe(1);
    const inProject = await f.call('GET', `/api/flags?projectId=${pid}`, as(owner));
    expect([inProject.status, inProject.body.map((x: { key: string }) => x.key)]).toEqual([200, ['banner-text']]);
    expect((await f.call('GET', '/api/flags?projectId=nope', as(owner))).status).toBe(422);
    const vars = await f.call('GET', '/api/flags/banner-text/variations', as(owner));
    expect(vars.body).toHaveLength(2);
    expect(vars.body[0]).toEqual({ id: expect.any(String), name: 'a', value: 'hello', description: 'control', weight: 0 });
    const ev = await f.call('POST', `/api/flags/projects/${pid}/flags/banner-text/evaluate`, { ...as(owner), json: { targetingKey: 'u9', country: 'NO' } });
    expect([ev.status, ev.body.value, ev.body.reason]).toEqual([200, 'hello', 'OFF']);
    const other = await f.call('POST', '/api/projects', { ...as(owner), json: { name: 'Other' } });
    expect((await f.call('POST', `/api/flags/projects/${other.body.id}/flags/banner-text/evaluate`, { ...as(owner), json: { key: 'u' } })).status).toBe(404);
    const foreignProject = await f.call('POST', '/api/projects', { ...as(stranger), json: { name: 'Theirs' } });
    const intoForeign = await f.call('POST', `/api/flags/projects/${foreignProject.body.id}/flags`, { ...as(owner), json: { key: 'sneaky', name: 's', type: 'boolean', defaultValue: true } });
    expect(intoForeign.status).toBe(404);
  });

  it('refuses to delete a prerequisite in use, deletes otherwise', async () => {
    await create({ key: 'parent', name: 'p', type: 'boolean', defaultValue: false });
    await create({ key: 'child', name: 'c', type: 'boolean', defaultValue: false });
    const parent = (await f.call('GET', '/api/flags/parent', as(owner))).body;
    const p = await f.call('PATCH', '/api/flags/child', { ...as(owner), json: { prerequisites: [{ key: 'parent', variationId: parent.variations[0].id }] } });
    expect(p.status).toBe(200);
    const cycle = await f.call('PATCH', '/api/flags/parent', { ...as(owner), json: { prerequisites: [{ key: 'child', variationId: p.body.variations[0].id }] } });
    expect(cycle.status).toBe(422);
    const inUse = await f.call('DELETE', '/api/flags/parent', as(owner));
    expect([inUse.status, inUse.body.dependents]).toEqual([409, ['child']]);
    expect((await f.call('DELETE', '/api/flags/child', as(owner))).status).toBe(204);
    expect((await f.call('DELETE', '/api/flags/parent', as(owner))).status).toBe(204);
    expect((await f.call('GET', '/api/flags/parent', as(owner))).status).toBe(404);
    expect((await f.call('DELETE', '/api/flags/parent', as(owner))).status).toBe(404);
  });

  it('exports an environment in the orep-server file format', async () => {
    const res = await f.call('GET', '/api/flags/export?environment=production', as(owner));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ version: 2, tenantId: owner.tenantId, environment: 'production', generatedAt: expect.any(String) });
    const nc = res.body.flags.find((x: { key: string }) => x.key === 'new-checkout');
    expect(nc).toMatchObject({ key: 'new-checkout', type: 'boolean', enabled: true, rules: [expect.objectContaining({ id: 'norway' })] });
  });
});
