import { validateFlagDefinition, type FlagDefinition } from '@flagship/flag-evaluation';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { DEMO_USERS } from './sandbox-demo';

describe('sandbox tenants (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let sandboxId: string;
  const as = (tenant: string, json?: unknown) => ({ token: owner.idToken, tenant, json });

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    owner = await f.signUp();
    const res = await f.call('POST', '/api/tenants', { token: owner.idToken, json: { name: 'Play', primaryEmail: owner.email, isSandbox: true } });
    sandboxId = res.body.id;
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('is active for 14 days', async () => {
    const res = await f.call('GET', '/api/sandbox/status', as(sandboxId));
    expect(res.status).toBe(200);
    expect(res.body.active).toBe(true);
    const days = (Date.parse(res.body.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(13.9);
    expect(days).toBeLessThanOrEqual(14);
  });

  it('is seeded with valid demo flags covering every kind of targeting, and demo users', async () => {
    const demo = await f.call('GET', '/api/sandbox/demo-data', as(sandboxId));
    expect(demo.body.users).toEqual(DEMO_USERS.map((u) => u.key));
    expect(demo.body.flags).toHaveLength(6);
    const exported = (await f.call('GET', '/api/flags/export', as(sandboxId))).body.flags as FlagDefinition[];
    const byKey = new Map(exported.map((d) => [d.key, d]));
    for (const d of exported) expect([d.key, validateFlagDefinition(d, (k) => byKey.get(k))]).toEqual([d.key, []]);
    const ops = new Set(exported.flatMap((d) => d.rules.flatMap((r) => r.clauses.map((c) => c.op))));
    expect([...ops].sort()).toEqual(['after', 'endsWith', 'in', 'matches', 'semVerGreaterThan']);
    expect(exported.some((d) => d.targets.length > 0)).toBe(true);
    expect(exported.some((d) => d.prerequisites.length > 0)).toBe(true);
    expect(exported.some((d) => d.rules.some((r) => r.rollout))).toBe(true);
    const project = await f.call('GET', '/api/projects', as(sandboxId));
    expect(project.body).toEqual([expect.objectContaining({ name: 'Demo shop', flagCount: 6 })]);
  });

  it('writes its demo flags as every flag write is written: each has its creation in its audit trail, by the creator', async () => {
    for (const key of ['demo-maintenance-banner', 'demo-beta-program']) {
      const trail = await f.call('GET', `/api/flags/${key}/audit`, as(sandboxId));
      expect([key, trail.status, trail.body]).toEqual([key, 200, [expect.objectContaining({ action: 'create', actor: `user:${owner.userId}`, environment: null })]]);
    }
  });

  it('evaluates the demo users as the demo flags describe, and counts it', async () => {
    const ev = async (flag: string, user: string) => {
      const u = DEMO_USERS.find((x) => x.key === user)!;
      return (await f.call('POST', `/api/flags/${flag}/evaluate`, as(sandboxId, { userId: u.key, attributes: u.attributes }))).body;
    };
    expect(await ev('demo-maintenance-banner', 'alice')).toMatchObject({ value: true, reason: 'TARGET_MATCH' });
    expect(await ev('demo-maintenance-banner', 'bob')).toMatchObject({ value: false, reason: 'FALLTHROUGH' });
    expect(await ev('demo-button-colour', 'bob')).toMatchObject({ value: 'green', reason: 'RULE_MATCH', ruleId: 'org-mail' });
    expect(await ev('demo-api-limit', 'dara')).toMatchObject({ value: 100, ruleId: 'enterprise' });
    expect(await ev('demo-beta-program', 'dara')).toMatchObject({ value: true, reason: 'RULE_MATCH', ruleId: 'beta-mail' });
    expect(await ev('demo-beta-program', 'bob')).toMatchObject({ value: false, reason: 'PREREQUISITE_FAILED' });
    const ind = await f.call('GET', '/api/sandbox/indicators', as(sandboxId));
    expect(ind.body).toEqual({ flagsUsed: 4, evaluations: 6 });
  });

  it('answers 404 for a tenant that is not a sandbox', async () => {
    for (const path of ['status', 'indicators', 'demo-data']) {
      const res = await f.call('GET', `/api/sandbox/${path}`, as(owner.tenantId));
      expect([path, res.status, res.body.type]).toEqual([path, 404, '/problems/not-a-sandbox']);
    }
    expect((await f.call('GET', '/api/sandbox/status', { token: owner.idToken })).status).toBe(400);
  });

  it('once expired, stays readable and evaluable but refuses writes', async () => {
    await f.sql(`UPDATE tenants SET sandbox_expires_at = now() - interval '1 day' WHERE id = $1`, [sandboxId]);
    expect((await f.call('GET', '/api/sandbox/status', as(sandboxId))).body.active).toBe(false);
    expect((await f.call('GET', '/api/flags/demo-api-limit', as(sandboxId))).status).toBe(200);
    expect((await f.call('POST', '/api/flags/demo-api-limit/evaluate', as(sandboxId, { userId: 'alice' }))).status).toBe(200);
    const write = await f.call('PATCH', '/api/flags/demo-api-limit', as(sandboxId, { name: 'changed' }));
    expect([write.status, write.body.type]).toEqual([403, '/problems/sandbox-expired']);
    expect((await f.call('POST', '/api/projects', as(sandboxId, { name: 'more' }))).status).toBe(403);
  });
});
