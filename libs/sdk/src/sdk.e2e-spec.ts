/**
 * The SDK against the BUILT management-api, started as a process on its own database and Redis
 * prefix (needs `npx nx run management-api:build` first; `npm test` builds). Users sign up through
 * the dev identity provider over plain HTTP, as a frontend would; everything else goes through the SDK.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestEnvironment, DisposableRedis, freePort, http, type TestEnvironment } from '@flagship/testing';
import { ApiError, AuthenticationError, FlagNotFoundError, FlagshipClient, type FlagshipClientOptions, RateLimitError, type RetryEvent, type Scope } from './index';

const MAIN_JS = join(__dirname, '../../../dist/apps/management-api/apps/management-api/src/main.js');
const PASSWORD = 'correct-horse-1';

interface RunningApi {
  url: string;
  /** The internal port (/metrics). */
  metricsUrl: string;
  te: TestEnvironment;
  stop(): Promise<void>;
}

async function startApi(extraEnv: NodeJS.ProcessEnv = {}, redis?: DisposableRedis): Promise<RunningApi> {
  if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run npx nx run management-api:build first`);
  const te = await createTestEnvironment({ IDP_MODE: 'dev', RATE_LIMIT_IP_PER_MINUTE: '100000', ...extraEnv });
  const port = await freePort();
  const metricsPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = { ...te.env, HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: String(metricsPort), PUBLIC_BASE_URL: url, ...(redis ? { REDIS_URL: redis.url } : {}) };
  const child: ChildProcess = spawn(process.execPath, [MAIN_JS], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c) => (output += c));
  child.stderr!.on('data', (c) => (output += c));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`management-api exited with ${child.exitCode}: ${output}`);
    const up = await http(`${url}/healthz`).then((r) => r.status === 200, () => false);
    if (up) break;
    if (Date.now() > deadline) throw new Error(`management-api did not answer /healthz within 30 s: ${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    te,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      await te.teardown();
    },
  };
}

interface SignedUp {
  email: string;
  idToken: string;
  tenantId: string;
}

/** A dev IdP account, then the sign-up that creates the user and their personal tenant. */
async function signUp(api: RunningApi, email = `sdk-${randomBytes(4).toString('hex')}@flagship.test`): Promise<SignedUp> {
  const account = await http(`${api.url}/dev/idp/accounts`, { method: 'POST', json: { email, password: PASSWORD } });
  if (account.status !== 201) throw new Error(`dev idp: ${account.status} ${account.text}`);
  const idToken: string = account.body.idToken;
  const res = await http(`${api.url}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: PASSWORD } });
  if (res.status !== 201) throw new Error(`signup: ${res.status} ${res.text}`);
  return { email, idToken, tenantId: res.body.data.canonical_tenant_id };
}

interface OAuthClientCredentials {
  clientId: string;
  clientSecret: string;
}

/** `POST /api/oauth/clients` as the tenant's admin, over plain HTTP: the SDK has no client-management calls. */
async function createOAuthClient(api: RunningApi, admin: SignedUp, name: string, scopes: string[]): Promise<OAuthClientCredentials> {
  const res = await http(`${api.url}/api/oauth/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin.idToken}`, 'x-tenant-id': admin.tenantId },
    json: { name, scopes },
  });
  if (res.status !== 201) throw new Error(`create oauth client: ${res.status} ${res.text}`);
  return { clientId: res.body.clientId, clientSecret: res.body.clientSecret };
}

/**
 * How many requests the server has answered on one route, by status, read from its own Prometheus
 * counter. fetch is not injectable into the SDK and it has no hook for token requests, so the
 * server's count is how the tests see how often the SDK went to the token endpoint.
 */
async function answered(api: RunningApi, method: string, route: string): Promise<Record<string, number>> {
  const res = await http(`${api.metricsUrl}/metrics`);
  if (res.status !== 200) throw new Error(`metrics: ${res.status}`);
  const counts: Record<string, number> = {};
  for (const line of res.text.split('\n')) {
    if (!line.startsWith('http_requests_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (labels['method'] === method && labels['route'] === route) counts[labels['status']] = Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return counts;
}

/** What `after` counted beyond `before`, per status (statuses with no new answers left out). */
function delta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [status, n] of Object.entries(after)) if (n - (before[status] ?? 0) > 0) out[status] = n - (before[status] ?? 0);
  return out;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The error a promise rejects with (fails the test when it resolves). */
async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

describe('FlagshipClient against management-api', () => {
  let api: RunningApi;
  let ada: SignedUp;
  let client: FlagshipClient;
  const sdk = (extra: Partial<FlagshipClientOptions> = {}) =>
    new FlagshipClient({ baseUrl: api.url, tenantId: ada.tenantId, auth: { idToken: ada.idToken }, ...extra });

  beforeAll(async () => {
    api = await startApi();
    ada = await signUp(api);
    client = sdk();
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
  });

  describe('flags and projects', () => {
    let projectId: string;

    beforeAll(async () => {
      projectId = (await client.projects.create({ name: 'Checkout', description: 'the checkout team', color: '#10b981' })).id;
    });

    it('creates a project and reads it back', async () => {
      const project = await client.projects.get(projectId);
      expect(project).toMatchObject({ id: projectId, name: 'Checkout', description: 'the checkout team', color: '#10b981', flagCount: 0 });
      const updated = await client.projects.update(projectId, { description: 'payments' });
      expect([updated.name, updated.description]).toEqual(['Checkout', 'payments']);
    });

    it('creates a flag, and a flag in a project with flag_variations', async () => {
      const flag = await client.flags.create({ key: 'dark-mode', name: 'Dark mode', type: 'boolean', defaultValue: false, tags: ['ui'] });
      expect(flag).toMatchObject({ key: 'dark-mode', type: 'boolean', enabled: false, tags: ['ui'], projectId: null, environment: 'production' });
      expect(flag.variations.map((v) => v.value)).toEqual([true, false]);

      const banner = await client.flags.createInProject(projectId, {
        key: 'banner-colour',
        name: 'Banner colour',
        type: 'string',
        defaultValue: 'blue',
        description: 'checkout banner',
        flag_variations: [
          { name: 'blue', value: 'blue', description: 'the old one' },
          { name: 'green', value: 'green' },
        ],
      });
      expect(banner.projectId).toBe(projectId);
      expect(banner.variations.map((v) => [v.name, v.value, v.description])).toEqual([
        ['blue', 'blue', 'the old one'],
        ['green', 'green', ''],
      ]);
      expect((await client.projects.get(projectId)).flagCount).toBe(1);
      expect(await client.flags.variations('banner-colour')).toEqual(banner.variations);
    });

    it('gets a flag with its ETag; an update with it passes, a stale one is ApiError 412', async () => {
      const { flag, etag } = await client.flags.get('dark-mode');
      expect([flag.key, etag]).toEqual(['dark-mode', expect.stringMatching(/^".+"$/)]);

      const updated = await client.flags.update('dark-mode', { name: 'Dark mode (beta)' }, { ifMatch: etag });
      expect(updated.flag.name).toBe('Dark mode (beta)');
      expect(updated.etag).not.toBe(etag);

      const err = await failure(client.flags.update('dark-mode', { name: 'Lost update' }, { ifMatch: etag }));
      expect(err).toBeInstanceOf(ApiError);
      const apiError = err as ApiError;
      expect([apiError.status, apiError.problem.type, apiError.problem.status, apiError.code]).toEqual([412, '/problems/flag-changed', 412, 'flag-changed']);
      // The request id is the problem's instance, so support can find the request in the logs.
      expect(apiError.requestId).toEqual(expect.any(String));
      expect(apiError.problem.instance).toBe(apiError.requestId);
      expect((await client.flags.get('dark-mode')).flag.name).toBe('Dark mode (beta)');
    });

    it("reads a flag's audit trail: the update names only the field it changed, from and to; the refused (412) one is not there", async () => {
      const trail = await client.flags.audit('dark-mode');
      expect(trail.map((e) => e.action)).toEqual(['create', 'update']);
      expect(trail[0]).toMatchObject({ environment: null, changes: { key: 'dark-mode', name: 'Dark mode' } });
      expect(trail[1]).toEqual({ action: 'update', actor: expect.stringMatching(/^user:/), environment: null, changes: { name: { from: 'Dark mode', to: 'Dark mode (beta)' } }, at: expect.any(String) });
      // A flag never created (or deleted: its trail stays) answers what is recorded.
      expect(await client.flags.audit('no-such-flag')).toEqual([]);
    });

    it('evaluates: RULE_MATCH after a patch adding a rule, in project scope too, and per environment', async () => {
      const { flag, etag } = await client.flags.get('banner-colour');
      const green = flag.variations.find((v) => v.name === 'green')!;
      expect(await client.flags.evaluate('banner-colour', { userId: 'u-1', attributes: { country: 'NO' } })).toMatchObject({ key: 'banner-colour', reason: 'OFF', enabled: false });

      await client.flags.update(
        'banner-colour',
        { enabled: true, rules: [{ id: 'nordics', description: 'Nordic users', clauses: [{ attribute: 'country', op: 'in', values: ['NO', 'SE'] }], variationId: green.id }] },
        { ifMatch: etag },
      );

      expect(await client.flags.evaluate('banner-colour', { userId: 'u-1', attributes: { country: 'NO' } })).toEqual({
        key: 'banner-colour',
        enabled: true,
        value: 'green',
        reason: 'RULE_MATCH',
        variationId: green.id,
        ruleId: 'nordics',
        ruleIndex: 0,
      });
      expect(await client.flags.evaluate('banner-colour', { userId: 'u-2', attributes: { country: 'FR' } })).toMatchObject({ value: 'blue', reason: 'FALLTHROUGH' });
      expect(await client.flags.evaluateInProject(projectId, 'banner-colour', { key: 'u-3', country: 'SE' })).toMatchObject({ value: 'green', reason: 'RULE_MATCH' });
      // The rule was added in production only: staging still has the flag off.
      expect(await client.flags.evaluate('banner-colour', { userId: 'u-1', attributes: { country: 'NO' }, environment: 'staging' })).toMatchObject({ reason: 'OFF' });
      expect(await client.flags.evaluate('banner-colour', { userId: 'u-1', attributes: { country: 'NO' } }, { environment: 'staging' })).toMatchObject({ reason: 'OFF' });
      expect((await client.flags.get('banner-colour', { environment: 'staging' })).flag).toMatchObject({ environment: 'staging', enabled: false, rules: [] });
    });

    it('exports the flags of an environment', async () => {
      const production = await client.flags.export();
      expect(production).toMatchObject({ tenantId: ada.tenantId, environment: 'production' });
      const banner = production.flags.find((f) => f.key === 'banner-colour');
      expect(banner).toMatchObject({ enabled: true, rules: [expect.objectContaining({ id: 'nordics' })] });
      const staging = await client.flags.export('staging');
      expect(staging.environment).toBe('staging');
      expect(staging.flags.find((f) => f.key === 'banner-colour')).toMatchObject({ enabled: false, rules: [] });
    });

    it('lists one page, and listAll() follows Link rel="next" through every page', async () => {
      for (let i = 0; i < 5; i++) await client.flags.create({ key: `page-${i}`, name: `Page ${i}`, type: 'number', defaultValue: i });
      const everything = await client.flags.list({ limit: 1000 });
      expect(everything.length).toBeGreaterThanOrEqual(7);

      expect(await client.flags.list({ limit: 2 })).toEqual(everything.slice(0, 2));
      const all = await collect(client.flags.listAll({ pageSize: 2 }));
      expect(all.map((f) => f.key)).toEqual(everything.map((f) => f.key));
      expect(new Set(all.map((f) => f.id)).size).toBe(all.length);

      await client.projects.create({ name: 'Second' });
      await client.projects.create({ name: 'Third' });
      expect((await collect(client.projects.listAll({ pageSize: 1 }))).map((p) => p.name)).toEqual((await client.projects.list()).map((p) => p.name));
    });

    it('imports LaunchDarkly SDK data, and reports never-matching values as warnings', async () => {
      const result = await client.flags.import(
        {
          flags: {
            'ld-checkout': {
              key: 'ld-checkout',
              on: true,
              variations: [true, false],
              offVariation: 1,
              fallthrough: { rollout: { variations: [{ variation: 0, weight: 10000 }, { variation: 1, weight: 90000 }], seed: 61 } },
              targets: [{ values: ['vip-1'], variation: 0 }],
              rules: [{ id: 'adults', clauses: [{ attribute: 'age', op: 'greaterThanOrEqual', values: ['18'] }], variation: 0 }],
              salt: 'ld-salt',
            },
          },
        },
        { environment: 'staging' },
      );
      expect(result).toMatchObject({ environment: 'staging', created: ['ld-checkout'], replaced: [], skipped: [] });
      expect(result.flags[0]?.warnings).toEqual([{ path: 'rules[0].clauses[0].values[0]', message: "must be a number for 'greaterThanOrEqual': this value never matches" }]);
      expect((await client.flags.get('ld-checkout', { environment: 'staging' })).flag.warnings).toHaveLength(1);
      expect(await client.flags.evaluate('ld-checkout', { userId: 'vip-1' }, { environment: 'staging' })).toMatchObject({ value: true, reason: 'TARGET_MATCH' });
      // userKeyA's bucket with seed 61 is 0.098: inside the first 10 %.
      expect(await client.flags.evaluate('ld-checkout', { userId: 'userKeyA', attributes: { age: 30 } }, { environment: 'staging' })).toMatchObject({ value: true, reason: 'FALLTHROUGH' });

      const err = await failure(client.flags.import([{ key: 'ld-segmented', variations: [true, false], fallthrough: { variation: 0 }, rules: [{ clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta'] }], variation: 0 }] }]));
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ status: 422, problem: { errors: { 'flags.ld-segmented.rules[0].clauses[0].values[0]': 'names no segment of this import or this environment ("beta")' } } });
      expect(await failure(client.flags.get('ld-segmented'))).toBeInstanceOf(FlagNotFoundError);
      // With the segment beside it in the same request, the flag comes, and a member of the segment matches.
      const segmented = {
        flags: { 'ld-segmented': { key: 'ld-segmented', on: true, variations: [true, false], offVariation: 1, fallthrough: { variation: 1 }, rules: [{ id: 'beta', clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta'] }], variation: 0 }], targets: [], prerequisites: [], salt: 'ld-segmented' } },
        segments: { beta: { key: 'beta', included: ['tester-1'], excluded: [], rules: [], salt: 'beta' } },
      };
      expect(await client.flags.import(segmented)).toMatchObject({ created: ['ld-segmented'], segments: { created: ['beta'], replaced: [] } });
      expect(await client.flags.evaluate('ld-segmented', { userId: 'tester-1' })).toMatchObject({ value: true, reason: 'RULE_MATCH' });
      expect(await client.flags.evaluate('ld-segmented', { userId: 'someone-else' })).toMatchObject({ value: false, reason: 'FALLTHROUGH' });
    });

    it('reports a missing flag as FlagNotFoundError, also after a delete', async () => {
      const err = await failure(client.flags.get('no-such-flag'));
      expect(err).toBeInstanceOf(FlagNotFoundError);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ status: 404, flagKey: 'no-such-flag', problem: expect.objectContaining({ type: '/problems/flag-not-found' }) });
      expect(await failure(client.flags.evaluate('no-such-flag', { userId: 'u' }))).toBeInstanceOf(FlagNotFoundError);

      await client.flags.create({ key: 'short-lived', name: 'Short lived', type: 'boolean', defaultValue: true });
      await client.flags.delete('short-lived');
      expect(await failure(client.flags.get('short-lived'))).toBeInstanceOf(FlagNotFoundError);
      // A 404 of another kind is not a missing flag.
      const projectMissing = await failure(client.projects.get('00000000-0000-4000-8000-000000000000'));
      expect(projectMissing).toBeInstanceOf(ApiError);
      expect(projectMissing).not.toBeInstanceOf(FlagNotFoundError);
      expect((projectMissing as ApiError).status).toBe(404);
    });

    it('reports validation failures as ApiError 422 with the problem\'s errors', async () => {
      const err = await failure(client.flags.create({ key: 'bad key!', name: '', type: 'boolean', defaultValue: true }));
      expect(err).toBeInstanceOf(ApiError);
      const apiError = err as ApiError;
      expect([apiError.status, apiError.problem.type]).toEqual([422, '/problems/validation-failed']);
      expect(Object.keys(apiError.errors ?? {}).sort()).toEqual(['key', 'name']);
      expect(apiError.message).toContain('HTTP 422 on POST /api/flags');
    });

    it('sends a fresh Idempotency-Key per call, and replays a call made with the same key', async () => {
      const input = { key: 'once-only', name: 'Once only', type: 'boolean' as const, defaultValue: false };
      const first = await client.flags.create(input, { idempotencyKey: 'sdk-e2e-once-only' });
      const replay = await client.flags.create(input, { idempotencyKey: 'sdk-e2e-once-only' });
      expect(replay).toEqual(first);
      // Without a shared key the second create is a new request, refused because the key exists.
      const err = await failure(client.flags.create(input));
      expect(err).toMatchObject({ status: 409, problem: expect.objectContaining({ type: '/problems/flag-exists' }) });
    });
  });

  describe('tenants and environments', () => {
    it('lists the user\'s tenants, creates one, adds a user, and pages through its members', async () => {
      expect((await client.tenants.list()).map((t) => t.id)).toContain(ada.tenantId);
      const acme = await client.tenants.create({ name: 'Acme', primaryEmail: 'ops@acme.test', contactName: 'Ada' });
      expect(acme).toMatchObject({ name: 'Acme', primaryEmail: 'ops@acme.test', contactName: 'Ada', isSandbox: false, subscription: { plan: 'free' } });
      expect((await client.tenants.list()).map((t) => t.id)).toEqual(expect.arrayContaining([ada.tenantId, acme.id]));

      const invitation = await client.tenants.addUser(acme.id, { email: 'grace@acme.test', role: 'editor' });
      expect(invitation).toMatchObject({ email: 'grace@acme.test', role: 'editor', status: 'pending', tenantId: acme.id });
      expect((await client.tenants.invitations(acme.id)).map((i) => i.id)).toEqual([invitation.id]);
      // Grace signs up (a tenant of her own) and accepts with her own session.
      const graceUser = await signUp(api, 'grace@acme.test');
      const asGrace = new FlagshipClient({ baseUrl: api.url, auth: { idToken: graceUser.idToken } });
      expect((await asGrace.tenants.myInvitations()).map((i) => i.id)).toEqual([invitation.id]);
      expect(await asGrace.tenants.acceptInvitation(invitation.id)).toMatchObject({ id: invitation.id, status: 'accepted' });
      const declined = await client.tenants.addUser(acme.id, { email: 'hal@acme.test', role: 'viewer' });
      await client.tenants.withdrawInvitation(acme.id, declined.id);
      expect(await client.tenants.invitations(acme.id)).toEqual([]);
      const members = await client.tenants.users(acme.id);
      const grace = members.find((m) => m.email === 'grace@acme.test')!;
      expect(members.map((m) => `${m.role} ${m.email}`).sort()).toEqual([`admin ${ada.email}`, 'editor grace@acme.test']);
      expect((await collect(client.tenants.allUsers(acme.id, { pageSize: 1 }))).map((m) => m.userId)).toEqual(members.map((m) => m.userId));
      expect(await client.tenants.updateUser(acme.id, grace.userId, { role: 'viewer' })).toMatchObject({ userId: grace.userId, role: 'viewer' });
      const me = members.find((m) => m.email === ada.email)!;
      await expect(client.tenants.removeUser(acme.id, me.userId)).rejects.toMatchObject({ status: 409 });
      await client.tenants.removeUser(acme.id, grace.userId);
      expect((await client.tenants.users(acme.id)).map((m) => m.email)).toEqual([ada.email]);

      // X-Tenant-ID per call: the new tenant has no flags of its own.
      expect(await client.flags.list({}, { tenantId: acme.id })).toEqual([]);
      expect((await client.flags.list()).length).toBeGreaterThan(0);
    });

    it('sends X-Tenant-ID only when configured: without it the API asks for it', async () => {
      const err = await failure(sdk({ tenantId: undefined }).flags.list());
      expect(err).toMatchObject({ status: 400, problem: expect.objectContaining({ type: '/problems/tenant-header-required' }) });
    });

    it('lists and creates environments', async () => {
      expect((await client.environments.list()).map((e) => e.key).sort()).toEqual(['development', 'production', 'staging']);
      expect(await client.environments.create({ key: 'qa', name: 'QA' })).toMatchObject({ key: 'qa', name: 'QA' });
      const qa = sdk({ environment: 'qa' });
      expect((await qa.flags.get('dark-mode')).flag.environment).toBe('qa');
    });
  });

  describe('flag governance: schedules, approvals, webhooks, stale flags', () => {
    const gov = { environment: 'gov' };

    beforeAll(async () => {
      await client.flags.create({ key: 'governed', name: 'Governed', type: 'boolean', defaultValue: false });
      await client.environments.create({ key: 'gov', name: 'Governed' });
    });

    it('schedules a change, lists it, cancels it; an environment requiring approval turns a direct change into ApiError 409 approval-required', async () => {
      const executeAt = new Date(Date.now() + 3_600_000).toISOString();
      const scheduled = await client.scheduledChanges.create('governed', { executeAt, patch: { enabled: true } }, gov);
      expect(scheduled).toMatchObject({ flagKey: 'governed', environment: 'gov', state: 'scheduled', executeAt, patch: { enabled: true } });
      expect((await client.scheduledChanges.list('governed', gov)).map((c) => c.id)).toEqual([scheduled.id]);
      await client.scheduledChanges.cancel('governed', scheduled.id, gov);
      expect((await client.scheduledChanges.list('governed', gov))[0]).toMatchObject({ id: scheduled.id, state: 'cancelled' });
      expect(await failure(client.scheduledChanges.create('governed', { executeAt: '2001-01-01T00:00:00Z', patch: { enabled: true } }, gov))).toMatchObject({ status: 422 });

      expect(await client.environments.update('gov', { requireApproval: true })).toMatchObject({ key: 'gov', requireApproval: true });
      const direct = await failure(client.flags.update('governed', { enabled: true }, gov));
      expect(direct).toMatchObject({ status: 409, problem: expect.objectContaining({ type: '/problems/approval-required' }) });
    });

    it('a change request: commented, refused to its author (ApiError 403), rejected, listed', async () => {
      const made = await client.changeRequests.create('governed', { patch: { enabled: true }, comment: 'ship it' }, gov);
      expect(made).toMatchObject({ state: 'pending', environment: 'gov', patch: { enabled: true } });
      expect((await client.changeRequests.comment('governed', made.id, 'after the freeze', gov)).comments.map((c) => c.body)).toEqual(['ship it', 'after the freeze']);
      const own = await failure(client.changeRequests.approve('governed', made.id, {}, gov));
      expect(own).toMatchObject({ status: 403, problem: expect.objectContaining({ type: '/problems/approval-not-allowed' }) });
      expect(await client.changeRequests.reject('governed', made.id, { comment: 'not now' }, gov)).toMatchObject({ state: 'rejected' });
      expect((await client.changeRequests.list('governed', gov)).map((r) => [r.id, r.state])).toEqual([[made.id, 'rejected']]);
      expect((await client.changeRequests.get('governed', made.id, gov)).decidedBy).toBe(made.author);
    });

    it('a webhook: its whsec_ secret shown once, listed without it, its delivery log, deleted', async () => {
      const hook = await client.webhooks.create({ url: 'https://hooks.example.com/sdk', events: ['flag.updated', 'environment.updated'] });
      expect(hook.secret).toMatch(/^whsec_/);
      const listed = (await client.webhooks.list()).find((w) => w.id === hook.id);
      expect(listed).toMatchObject({ url: 'https://hooks.example.com/sdk', enabled: true });
      expect(listed).not.toHaveProperty('secret');
      await client.environments.update('gov', { name: 'Governed (approvals)' });
      expect((await client.webhooks.deliveries(hook.id)).map((d) => [d.type, d.status])).toEqual([['environment.updated', 'pending']]);
      expect(await failure(client.webhooks.create({ url: 'http://127.0.0.1/hook', events: ['flag.updated'] }))).toMatchObject({ status: 422 });
      await client.webhooks.delete(hook.id);
      expect((await client.webhooks.list()).map((w) => w.id)).not.toContain(hook.id);
    });

    it('lists flags by lifecycle: a new flag has the whole period to be used, so it is active, not stale', async () => {
      const flag = (await client.flags.list({ lifecycle: 'active', staleAfterDays: 1 }, gov)).find((f) => f.key === 'governed');
      expect(flag).toMatchObject({ key: 'governed', lastEvaluatedAt: null });
      expect((await client.flags.list({ lifecycle: 'stale', staleAfterDays: 1 }, gov)).map((f) => f.key)).not.toContain('governed');
    });
  });

  describe('authentication', () => {
    it('reports a bad token as AuthenticationError, without retrying or echoing it', async () => {
      const bad = sdk({ auth: { idToken: 'not.a-valid.token' } });
      const err = await failure(bad.flags.list());
      expect(err).toBeInstanceOf(AuthenticationError);
      expect(err).toMatchObject({ status: 401, attempts: 1, problem: expect.objectContaining({ type: '/problems/invalid-token' }) });
      expect((err as Error).message).not.toContain('not.a-valid.token');
    });

    it('asks a token function once more after a 401 invalid_token, and goes on with the new token', async () => {
      const handedOut: string[] = [];
      const tokens = ['stale.expired.token', ada.idToken];
      const renewing = sdk({
        auth: {
          idToken: async () => {
            const t = tokens[Math.min(handedOut.length, tokens.length - 1)];
            handedOut.push(t);
            return t;
          },
        },
      });
      expect((await renewing.flags.list()).length).toBeGreaterThan(0);
      expect(handedOut).toEqual(['stale.expired.token', ada.idToken]);
    });
  });

  describe('billing credits and usage', () => {
    let db: Client;
    /** A completed ledger row as the AI gateway writes it (the gateway is another app; its rows are what this API reads). */
    const ledgerRow = (productKey: string, model: string, createdAt: string, inputTokens: number, outputTokens: number, debit: number) =>
      db.query(
        // With the usage rollups' delta a settlement appends (GET /api/usage/summary reads rollups).
        `WITH r AS (
           INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, input_tokens, output_tokens, created_at, completed_at)
           VALUES ($1, 'ffc_gw', $2, 'inhouse', $3, 'chat.completions', 'succeeded', $4, $5, $6, $7, $7) RETURNING *
         )
         INSERT INTO usage_rollup_deltas (tenant_id, hour, product_key, client_id, model, provider, endpoint, status, requests, input_tokens, output_tokens, cached_tokens, debit, errors)
         SELECT tenant_id, date_trunc('hour', created_at, 'UTC'), product_key, client_id, model, provider, endpoint, status, 1, input_tokens, output_tokens, cached_tokens, debit, 0 FROM r`,
        [ada.tenantId, productKey, model, debit, inputTokens, outputTokens, createdAt],
      );

    beforeAll(async () => {
      db = new Client({ connectionString: api.te.db.url });
      await db.connect();
      await ledgerRow('core', 'small', '2026-11-01T10:00:00.000Z', 10, 20, 300);
      await ledgerRow('core', 'small', '2026-11-02T10:00:00.000Z', 1, 2, 30);
      await ledgerRow('core', 'large', '2026-11-03T10:00:00.000Z', 100, 50, 4000);
    });
    afterAll(async () => {
      await db?.end();
    });

    it('reads the credit balance: zeros before any grant, then what the tenant holds', async () => {
      expect(await client.billing.credits()).toEqual({ balance: 0, reserved: 0 });
      await db.query('INSERT INTO credit_balances (tenant_id, balance, reserved) VALUES ($1, 2500000, 400)', [ada.tenantId]);
      expect(await client.billing.credits()).toEqual({ balance: 2_500_000, reserved: 400 });
    });

    it('sets, reads and removes the low-balance alert, and lists its crossings', async () => {
      // The balance is 2,500,000 (the test above): a threshold below it is armed.
      expect(await client.billing.setLowBalanceAlert(1_000_000)).toEqual({ threshold: 1_000_000, armed: true, below: false, balance: 2_500_000 });
      expect(await client.billing.lowBalanceAlert()).toEqual({ threshold: 1_000_000, armed: true, below: false, balance: 2_500_000 });
      expect(await client.billing.lowBalanceCrossings({ limit: 5 })).toEqual([]);
      await expect(client.billing.setLowBalanceAlert(-1)).rejects.toMatchObject({ status: 422 });
      await client.billing.removeLowBalanceAlert();
      expect(await client.billing.lowBalanceAlert()).toEqual({ threshold: null, armed: false, below: false, balance: 2_500_000 });
    });

    it('sets, lists and removes a budget; names a missing client with its problem', async () => {
      // Spent: what core already debited this month (the usage rows seeded for the tests below count when they fall in it).
      expect(await client.billing.setBudget('product', 'core', 5_000_000)).toMatchObject({ kind: 'product', id: 'core', monthlyCapMicroCredits: 5_000_000, spentMicroCredits: expect.any(Number), reservedMicroCredits: 0 });
      expect((await client.billing.budgets({ limit: 5 })).map((b) => [b.kind, b.id, b.monthlyCapMicroCredits])).toEqual([['product', 'core', 5_000_000]]);
      await expect(client.billing.setBudget('client', 'ffc_noSuchClient000000000', 1)).rejects.toMatchObject({ status: 404 });
      await expect(client.billing.setBudget('product', 'core', -1)).rejects.toMatchObject({ status: 422 });
      await client.billing.removeBudget('product', 'core');
      expect(await client.billing.budgets()).toEqual([]);
      await expect(client.billing.removeBudget('product', 'core')).rejects.toMatchObject({ status: 404 });
    });

    it('lists usage newest first with filters, pages through listAll(), and sums the same filter', async () => {
      const page = await client.usage.list({ limit: 2 });
      expect(page.map((r) => [r.model, r.debit])).toEqual([['large', 4000], ['small', 30]]);
      expect((await client.usage.list({ model: 'small', from: '2026-11-02T00:00:00Z' })).map((r) => r.createdAt)).toEqual(['2026-11-02T10:00:00.000Z']);
      expect((await collect(client.usage.listAll({ productKey: 'core', pageSize: 1 }))).map((r) => r.createdAt)).toEqual([
        '2026-11-03T10:00:00.000Z',
        '2026-11-02T10:00:00.000Z',
        '2026-11-01T10:00:00.000Z',
      ]);
      expect((await client.usage.daily({ to: '2026-11-03T00:00:00Z' })).days).toEqual([
        { day: '2026-11-01', productKey: 'core', model: 'small', requests: 1, inputTokens: 10, outputTokens: 20, debit: 300 },
        { day: '2026-11-02', productKey: 'core', model: 'small', requests: 1, inputTokens: 1, outputTokens: 2, debit: 30 },
      ]);
      const summary = await client.usage.summary({ to: '2026-11-03T00:00:00Z' });
      expect(summary).toEqual({
        from: null,
        to: '2026-11-03T00:00:00.000Z',
        totals: { requests: 2, inputTokens: 11, outputTokens: 22, debit: 330 },
        byProductAndModel: [{ productKey: 'core', model: 'small', requests: 2, inputTokens: 11, outputTokens: 22, debit: 330 }],
      });
    });

    it('downloads the usage export as a stream: CSV by default, JSON lines on request, a bad range an ApiError 422', async () => {
      const file = await client.usage.export({ from: '2026-11-01', to: '2026-12-01', model: 'small' });
      expect([file.filename, file.contentType]).toEqual(['usage-20261101T000000Z-20261201T000000Z.csv', 'text/csv; charset=utf-8; header=present']);
      const lines = (await new Response(file.body).text()).split('\r\n');
      expect(lines[0].split(',').slice(0, 3)).toEqual(['id', 'created_at', 'completed_at']);
      expect(lines.slice(1).map((l) => l.split(',')[1])).toEqual(['2026-11-01T10:00:00.000Z', '2026-11-02T10:00:00.000Z', undefined]);
      const jsonl = await client.usage.export({ from: '2026-11-03', to: '2026-11-04', format: 'jsonl' });
      expect(jsonl.filename).toBe('usage-20261103T000000Z-20261104T000000Z.jsonl');
      const rows = (await new Response(jsonl.body).text()).trim().split('\n').map((l) => JSON.parse(l));
      expect(rows).toEqual([expect.objectContaining({ model: 'large', debit: 4000, input_tokens: 100 })]);
      const err = await failure(client.usage.export({ from: '2025-01-01', to: '2026-11-01' }));
      expect([(err as ApiError).status, Object.keys((err as ApiError).errors ?? {})]).toEqual([422, ['to']]);
    });

    it('reports a bad filter as ApiError 422 naming the field', async () => {
      const err = await failure(client.usage.summary({ from: '2026-11-05', to: '2026-11-01' }));
      expect(err).toBeInstanceOf(ApiError);
      expect([(err as ApiError).status, Object.keys((err as ApiError).errors ?? {})]).toEqual([422, ['from']]);
    });
  });

  describe('OAuth client credentials', () => {
    const READ_EVALUATE: Scope[] = ['flags:read', 'flags:evaluate'];
    let reader: OAuthClientCredentials;
    const machine = (credentials: OAuthClientCredentials, extra: Partial<FlagshipClientOptions> = {}) =>
      // No tenantId: a client token is bound to its tenant, and docs/management-api.md says it may be left out.
      new FlagshipClient({ baseUrl: api.url, auth: { ...credentials, scopes: READ_EVALUATE }, ...extra });

    beforeAll(async () => {
      await client.flags.create({ key: 'm2m-switch', name: 'M2M switch', type: 'boolean', defaultValue: true, enabled: true });
      reader = await createOAuthClient(api, ada, 'sdk reader', READ_EVALUATE);
    });

    it('lists and evaluates the tenant\'s flags with a client token, fetched once for many calls', async () => {
      const before = await answered(api, 'POST', '/oauth/token');
      const backend = machine(reader);
      // A cold client hit by a burst: the calls share one token request.
      const [flags, evaluation, tenants] = await Promise.all([
        backend.flags.list({ limit: 1000 }),
        backend.flags.evaluate('m2m-switch', { userId: 'svc-1' }),
        backend.tenants.list(),
      ]);
      expect(flags.map((f) => f.key)).toContain('m2m-switch');
      expect(flags.map((f) => f.key).sort()).toEqual((await client.flags.list({ limit: 1000 })).map((f) => f.key).sort());
      expect(evaluation).toMatchObject({ key: 'm2m-switch', enabled: true, value: true, reason: 'FALLTHROUGH' });
      expect(tenants.map((t) => t.id)).toEqual([ada.tenantId]);
      // Then sequential calls on the warm client reuse the cached token.
      for (let i = 0; i < 5; i++) expect((await backend.flags.evaluate('m2m-switch', { userId: `svc-${i}` })).value).toBe(true);
      expect(delta(before, await answered(api, 'POST', '/oauth/token'))).toEqual({ '200': 1 });
    });

    it('gets ApiError 403 insufficient-scope when creating a flag without flags:write', async () => {
      const err = await failure(machine(reader).flags.create({ key: 'm2m-nope', name: 'Nope', type: 'boolean', defaultValue: true }));
      expect(err).toBeInstanceOf(ApiError);
      // A valid token lacking a scope is not an authentication failure: no token refresh can fix it.
      expect(err).not.toBeInstanceOf(AuthenticationError);
      expect(err).toMatchObject({ status: 403, code: 'insufficient-scope', method: 'POST', path: '/api/flags', attempts: 1 });
      expect(await failure(client.flags.get('m2m-nope'))).toBeInstanceOf(FlagNotFoundError);
    });

    it('reports a wrong secret as AuthenticationError carrying the OAuth error, never the secret', async () => {
      const wrongSecret = 'ffs_definitely-not-the-secret';
      const err = await failure(machine({ clientId: reader.clientId, clientSecret: wrongSecret }).flags.list());
      expect(err).toBeInstanceOf(AuthenticationError);
      expect(err).toMatchObject({ status: 401, oauthError: 'invalid_client', method: 'POST', path: '/oauth/token', attempts: 1 });
      expect((err as Error).message).toContain('invalid_client');
      expect((err as Error).message).not.toContain(wrongSecret);
      expect(JSON.stringify(err)).not.toContain(wrongSecret);

      // A scope the client was not given is the endpoint's invalid_scope (400), also an AuthenticationError.
      const tooWide = new FlagshipClient({ baseUrl: api.url, auth: { ...reader, scopes: ['flags:write'] } });
      expect(await failure(tooWide.flags.list())).toMatchObject({ name: 'AuthenticationError', status: 400, oauthError: 'invalid_scope' });
    });

    it('lets the caller abort a call that is still waiting for its token', async () => {
      // A token endpoint that takes the request and never answers (a stalled proxy): without the
      // caller's abort the call would wait out timeoutMs.
      const stalled = createServer(() => undefined);
      await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
      try {
        const tokenUrl = `http://127.0.0.1:${(stalled.address() as AddressInfo).port}/oauth/token`;
        const waiting = new FlagshipClient({ baseUrl: api.url, auth: { ...reader, tokenUrl }, timeoutMs: 10_000, maxRetries: 0 });
        const reason = new Error('the caller gave up');
        const controller = new AbortController();
        const started = Date.now();
        const call = failure(waiting.flags.list({}, { signal: controller.signal }));
        setTimeout(() => controller.abort(reason), 100);
        expect(await call).toBe(reason);
        expect(Date.now() - started).toBeLessThan(2000);
        // Aborted before the call: refused at once, even though a token request is still pending.
        expect(await failure(waiting.flags.list({}, { signal: AbortSignal.abort(reason) }))).toBe(reason);
      } finally {
        stalled.closeAllConnections();
        await new Promise((resolve) => stalled.close(resolve));
      }
      // Longer than timeoutMs: an SDK that ignored the abort fails on the assertion, not on jest's clock.
    }, 15_000);

    it('after the client is deleted, its cached token is refused and the one refresh fails with invalid_client', async () => {
      const doomed = await createOAuthClient(api, ada, 'sdk doomed', READ_EVALUATE);
      const backend = machine(doomed);
      expect((await backend.flags.evaluate('m2m-switch', { userId: 'svc' })).value).toBe(true);

      const deleted = await http(`${api.url}/api/oauth/clients/${doomed.clientId}`, { method: 'DELETE', headers: { authorization: `Bearer ${ada.idToken}`, 'x-tenant-id': ada.tenantId } });
      expect(deleted.status).toBe(204);

      const apiBefore = await answered(api, 'GET', '/api/flags');
      const tokenBefore = await answered(api, 'POST', '/oauth/token');
      const err = await failure(backend.flags.list());
      // The API refused the cached token once (401 invalid_token); the SDK asked the token endpoint
      // once (401 invalid_client) and stopped: no loop, no retry of either.
      expect(delta(apiBefore, await answered(api, 'GET', '/api/flags'))).toEqual({ '401': 1 });
      expect(delta(tokenBefore, await answered(api, 'POST', '/oauth/token'))).toEqual({ '401': 1 });
      expect(err).toBeInstanceOf(AuthenticationError);
      const auth = err as AuthenticationError;
      expect(auth).toMatchObject({ status: 401, oauthError: 'invalid_client', path: '/oauth/token' });
      expect(auth.message).toMatch(/^The token endpoint refused the client credentials: invalid_client: .+ \(HTTP 401 on POST \/oauth\/token, request id .+\)$/);
    });
  });

  describe('retries', () => {
    it('retries a POST that timed out with the same Idempotency-Key, waits out the 409 of its first attempt, and creates once', async () => {
      // A transaction holding the projects table keeps the first attempt's insert running on the
      // server after the client gave up on it: the situation the Idempotency-Key exists for.
      const pg = new Client({ connectionString: api.te.env['DATABASE_URL'] });
      await pg.connect();
      const events: Array<RetryEvent & { at: number }> = [];
      const started = Date.now();
      try {
        await pg.query('BEGIN');
        await pg.query('LOCK TABLE projects IN ACCESS EXCLUSIVE MODE');
        const retrying = sdk({ timeoutMs: 400, maxRetries: 6, onRetry: (e) => events.push({ ...e, at: Date.now() - started }) });
        const created = retrying.projects.create({ name: 'Created once' });
        await new Promise((r) => setTimeout(r, 1500));
        await pg.query('COMMIT');
        expect((await created).name).toBe('Created once');
      } finally {
        await pg.end();
      }
      // First the timeout (no status), then our own key still in flight (409, Retry-After: 1).
      expect(events[0]).toMatchObject({ method: 'POST', path: '/api/projects', retry: 1, status: undefined, error: expect.objectContaining({ name: 'TimeoutError' }) });
      const inFlight = events.find((e) => e.status === 409);
      expect(inFlight?.delayMs).toBeGreaterThanOrEqual(1000);
      expect(Date.now() - started).toBeGreaterThanOrEqual(inFlight!.at + 1000);
      expect((await client.projects.list({ limit: 1000 })).filter((p) => p.name === 'Created once')).toHaveLength(1);
    }, 20_000);
  });
});

describe('FlagshipClient under rate limits and outages', () => {
  // Three requests per minute for a free tenant; its own Redis, so the test can stop it.
  let redis: DisposableRedis;
  let api: RunningApi;

  beforeAll(async () => {
    redis = await DisposableRedis.start();
    api = await startApi({ RATE_LIMIT_FREE: '3' }, redis);
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
    await redis?.stop();
  });

  it('surfaces a 429 as RateLimitError with the wait the server asked for when retries are off', async () => {
    const user = await signUp(api);
    const client = new FlagshipClient({ baseUrl: api.url, tenantId: user.tenantId, auth: { idToken: user.idToken }, maxRetries: 0 });
    for (let i = 0; i < 3; i++) await client.flags.list();
    const started = Date.now();
    const err = await failure(client.flags.list());
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err).toBeInstanceOf(ApiError);
    const limited = err as RateLimitError;
    expect([limited.status, limited.problem.type, limited.limit, limited.remaining, limited.attempts]).toEqual([429, '/problems/rate-limited', 3, 0, 1]);
    // Three per minute: the next slot is about 20 s away or more.
    expect(limited.retryAfterMs).toBeGreaterThan(5000);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('does not sleep on a Retry-After longer than maxRetryDelayMs: it fails at once with the wait in the error', async () => {
    const user = await signUp(api);
    const retries: RetryEvent[] = [];
    const client = new FlagshipClient({
      baseUrl: api.url,
      tenantId: user.tenantId,
      auth: { idToken: user.idToken },
      maxRetries: 3,
      maxRetryDelayMs: 5000,
      onRetry: (e) => retries.push(e),
    });
    for (let i = 0; i < 3; i++) await client.projects.list();
    const started = Date.now();
    const err = await failure(client.projects.list());
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfterMs).toBeGreaterThan(5000);
    expect([retries, (err as RateLimitError).attempts]).toEqual([[], 1]);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('retries 503s, waiting the Retry-After they carry, while Redis is down, and the POST succeeds once it is back', async () => {
    const user = await signUp(api);
    const retries: RetryEvent[] = [];
    const client = new FlagshipClient({ baseUrl: api.url, tenantId: user.tenantId, auth: { idToken: user.idToken }, maxRetries: 8, onRetry: (e) => retries.push(e) });
    await redis.stop();
    const started = Date.now();
    // Without Redis the API cannot keep its Idempotency-Key promise, so it refuses keyed requests with 503.
    const created = client.projects.create({ name: 'After the outage' });
    await new Promise((r) => setTimeout(r, 1500));
    await redis.start();
    expect((await created).name).toBe('After the outage');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries.every((e) => e.status === 503)).toBe(true);
    // The 503 carries Retry-After (2 s): every wait honours it, plus at most 10 % of jitter.
    expect(retries.filter((e) => e.delayMs < 2000 || e.delayMs > 2200)).toEqual([]);
    expect((await client.projects.list()).map((p) => p.name)).toEqual(['After the outage']);
  }, 30_000);
});
