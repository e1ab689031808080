import { bootstrapService, runningApp, type RunningApp } from '@flagship/service-kit';
import { createDataSource } from '@flagship/persistence';
import { freePort, waitFor } from '@flagship/testing';
import { AppModule } from '../app.module';
import { configureManagementApi } from '../configure';
import { loadManagementApiConfig } from '../env.schema';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { startManagementApiProcess } from '../testing/management-api.process';
import { SqlRolloutsRepository } from './rollouts.repository';
import { type RolloutStep, RolloutsService } from './rollouts.service';

/**
 * Guarded rollouts on real Postgres with two management-api apps on one database (the runners'
 * loops off, SCHEDULED_CHANGES_POLL_MS=0, and driven by hand at once): each decision is taken once,
 * a regressing treatment is rolled back once, a healthy one advances, an edited flag stops its plan.
 */
describe('guarded rollouts across replicas (two apps, one Postgres)', () => {
  let a: ManagementApiFixture;
  let b: RunningApp;
  let owner: SignedUp;
  const as = () => ({ token: owner.idToken, tenant: owner.tenantId });

  beforeAll(async () => {
    a = await ManagementApiFixture.start({ SCHEDULED_CHANGES_POLL_MS: '0', ROLLOUT_CHECK_MS: '600000', WEBHOOKS_ALLOW_PRIVATE_URLS: 'true' });
    const port = await freePort();
    b = runningApp(await bootstrapService(AppModule.forConfig(loadManagementApiConfig({ ...a.te.env, PORT: String(port) })), { port, host: '127.0.0.1', handleSignals: false, configure: configureManagementApi }));
    owner = await a.signUp();
    const hook = await a.call('POST', '/api/webhooks', { ...as(), json: { url: 'http://127.0.0.1:9/hook', events: ['flag.updated'] } });
    expect(hook.status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await a?.stop();
  });

  /** A JSON flag small/large (small the control: the default, so the off value) bound to `productKey` with `plan`. */
  async function bound(flagKey: string, productKey: string, plan: object): Promise<{ small: string; large: string }> {
    const created = await a.call('POST', '/api/flags', {
      ...as(),
      json: { key: flagKey, name: flagKey, type: 'json', defaultValue: { model: 'small' }, flag_variations: [{ name: 'small', value: { model: 'small' } }, { name: 'large', value: { model: 'large' } }] },
    });
    expect(created.status).toBe(201);
    await a.sql(`INSERT INTO gateway_bindings (tenant_id, product_key, flag_key, rollout_plan) VALUES ($1, $2, $3, $4)`, [owner.tenantId, productKey, flagKey, JSON.stringify(plan)]);
    const vs = (await a.sql<{ variations: Array<{ id: string; name: string }> }>(`SELECT variations FROM flags WHERE tenant_id = $1 AND key = $2`, [owner.tenantId, flagKey])).rows[0]!.variations;
    return { small: vs.find((v) => v.name === 'small')!.id, large: vs.find((v) => v.name === 'large')!.id };
  }

  /** Both replicas run every due decision at once, until neither finds one. */
  async function race(): Promise<RolloutStep[]> {
    const done: RolloutStep[] = [];
    const drain = async (s: RolloutsService) => {
      for (let step = await s.runNext(); step; step = await s.runNext()) done.push(step);
    };
    await Promise.all([drain(a.svc.app.get(RolloutsService)), drain(b.app.get(RolloutsService))]);
    return done;
  }
  const due = (productKey: string) => a.sql(`UPDATE rollout_states SET next_check_at = now() - interval '1 second' WHERE tenant_id = $1 AND product_key = $2`, [owner.tenantId, productKey]);
  const weights = async (flagKey: string) =>
    (await a.sql<{ variations: Array<{ name: string; weight: number }> }>(`SELECT variations FROM flags WHERE tenant_id = $1 AND key = $2`, [owner.tenantId, flagKey])).rows[0]!.variations.map((v) => [v.name, v.weight]);
  /** `n` completed requests of `variation`, `failing` of them failed, latencies spread over [lo, hi). */
  async function traffic(productKey: string, flagKey: string, variation: string, n: number, failing: number, lo: number, hi: number): Promise<void> {
    await a.sql(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, error_code, latency_ms, request_id, created_at, completed_at, flag_key, flag_version, variation, context_kind)
       SELECT $1, 'ffc_test', $2, 'inhouse', 'm', 'chat.completions', CASE WHEN i <= $5::int THEN 'failed' ELSE 'succeeded' END, CASE WHEN i <= $5::int THEN 0 ELSE 1000 END,
              CASE WHEN i <= $5::int THEN 'upstream_error' END, $6::int + (($7::int - $6::int) * i / $4::int), 'r-' || gen_random_uuid(), now(), now(), $3, 1, $8, 'multi'
         FROM generate_series(1, $4::int) AS i`,
      [owner.tenantId, productKey, flagKey, n, failing, lo, hi, variation],
    );
  }
  const decisions = async (productKey: string) => (await a.call('GET', `/api/gateway/bindings/${productKey}/rollout`, as())).body;
  const plan = { stages: [{ percent: 10, minRequests: 50 }, { percent: 50, minRequests: 50 }, { percent: 100 }], guards: { errorRate: 0.02, p95LatencyMs: 400 } };

  it('starts once, and rolls a regressing treatment back once, through the flag write path', async () => {
    const { small, large } = await bound('chat-model', 'core', plan);
    const started = await race();
    expect(started.map((s) => [s.productKey, s.decision])).toEqual([['core', 'started']]);
    expect(await weights('chat-model')).toEqual([['small', 90_000], ['large', 10_000]]);

    // The treatment's upstream fails a third of its requests; the control's hardly ever.
    await traffic('core', 'chat-model', small, 400, 2, 200, 600);
    await traffic('core', 'chat-model', large, 45, 15, 200, 600);
    await due('core');
    const judged = await race();
    expect(judged.map((s) => s.decision)).toEqual(['rolled_back']);
    expect(judged[0]!.reason).toMatch(/^error rate over the control by 32\.83 points \(95% interval/);
    expect(await weights('chat-model')).toEqual([['small', 100_000], ['large', 0]]);
    await due('core');
    expect(await race()).toEqual([]); // rolled back: nothing more to decide

    const view = await decisions('core');
    expect(view.state).toMatchObject({ status: 'rolled_back', stage: 0, controlVariationId: small, treatmentVariationId: large });
    expect(view.decisions.map((d: { decision: string; percent: number }) => [d.decision, d.percent])).toEqual([['rolled_back', 0], ['started', 10]]);
    expect(view.decisions[0].figures.treatment).toMatchObject({ requests: 45, errorRate: 15 / 45 });
    // Versioned and audited as the rollout, announced to webhooks: two writes, one rollout record each.
    const audit = (await a.sql(`SELECT action, actor FROM flag_audit WHERE tenant_id = $1 AND flag_key = 'chat-model' ORDER BY id`, [owner.tenantId])).rows;
    expect(audit).toEqual([
      { action: 'create', actor: expect.any(String) },
      { action: 'update', actor: 'rollout:core' },
      { action: 'rollout', actor: 'rollout:core' },
      { action: 'update', actor: 'rollout:core' },
      { action: 'rollout', actor: 'rollout:core' },
    ]);
    const events = (await a.sql(`SELECT payload->'data'->>'actor' AS actor FROM webhook_deliveries WHERE tenant_id = $1 AND event_type = 'flag.updated' AND payload->'data'->>'flagKey' = 'chat-model'`, [owner.tenantId])).rows;
    expect(events).toEqual([{ actor: 'rollout:core' }, { actor: 'rollout:core' }]);
    const flag = await a.call('GET', '/api/flags/chat-model', as());
    expect(flag.headers.get('etag')).toBe('"3.1"');
  });

  it('advances a treatment that does not regress, once, and holds while a stage lacks requests', async () => {
    const { small, large } = await bound('search-model', 'search', plan);
    await race();
    await traffic('search', 'search-model', small, 400, 2, 200, 600);
    await traffic('search', 'search-model', large, 30, 0, 200, 600);
    await due('search');
    expect((await race()).map((s) => [s.decision, s.reason])).toEqual([['held', 'stage 1 (10%) has 30 of 50 treatment requests']]);
    await traffic('search', 'search-model', large, 30, 0, 210, 610);
    await due('search');
    expect((await race()).map((s) => [s.decision, s.reason])).toEqual([['advanced', 'stage 1 (10%) held within the guards; on to 50%']]);
    expect(await weights('search-model')).toEqual([['small', 50_000], ['large', 50_000]]);
    const view = await decisions('search');
    expect(view.state).toMatchObject({ status: 'running', stage: 1 });
    expect(view.decisions.map((d: { decision: string }) => d.decision)).toEqual(['advanced', 'held', 'started']);
  });

  it('stops a plan whose flag was edited since its last write, and leaves a paused plan alone', async () => {
    await bound('edited-model', 'edited', plan);
    await race();
    const patched = await a.call('PATCH', '/api/flags/edited-model', { ...as(), json: { description: 'by hand' } });
    expect(patched.status).toBe(200);
    await due('edited');
    const stopped = await race();
    expect(stopped.map((s) => s.decision)).toEqual(['stopped']);
    expect(stopped[0]!.reason).toMatch(/^flag edited-model was changed since the plan's last write \(version 2\.1, now 3\.1\)/);
    expect((await decisions('edited')).state.status).toBe('stopped');

    await bound('paused-model', 'paused', { ...plan, paused: true });
    expect((await race()).map((s) => s.decision)).toEqual(['paused']);
    expect(await weights('paused-model')).toEqual([['small', 1], ['large', 1]].map(([n]) => [n, expect.any(Number)]));
    expect((await a.sql(`SELECT count(*)::int AS n FROM flag_audit WHERE tenant_id = $1 AND flag_key = 'paused-model' AND action = 'update' AND actor LIKE 'rollout:%'`, [owner.tenantId])).rows[0]).toEqual({ n: 0 });
  });

  it('a replica killed after claiming a plan and writing the flag, before committing: nothing of it stays, and the other replica decides once', async () => {
    await bound('killed-model', 'killed', plan);
    const dying = createDataSource({ url: a.te.db.url, poolSize: 1, entities: [] });
    await dying.initialize();
    const qr = dying.createQueryRunner();
    await qr.connect();
    await qr.startTransaction();
    const claimed = await new SqlRolloutsRepository(dying).claimDue(qr.manager, new Date());
    expect(claimed?.binding.productKey).toBe('killed');
    await qr.query(`UPDATE flags SET version = version + 1 WHERE tenant_id = $1 AND key = 'killed-model'`, [owner.tenantId]);
    const [{ pid }] = (await qr.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;

    const other = b.app.get(RolloutsService);
    expect(await other.runNext()).toBeNull(); // held by the dying replica: skipped, not waited for
    await a.sql('SELECT pg_terminate_backend($1)', [pid]);
    await qr.release().catch(() => undefined);
    await dying.destroy().catch(() => undefined);
    // pg_terminate_backend only signals: the backend (and its locks) goes a moment later.
    await waitFor(async () => (await a.sql<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0]!.n === 0, 10_000, 10);

    expect(await other.runNext()).toMatchObject({ productKey: 'killed', decision: 'started' });
    expect(await other.runNext()).toBeNull();
    expect(await weights('killed-model')).toEqual([['small', 90_000], ['large', 10_000]]);
    expect((await decisions('killed')).decisions.map((d: { decision: string }) => d.decision)).toEqual(['started']);
    expect((await a.call('GET', '/api/flags/killed-model', as())).headers.get('etag')).toBe('"2.1"');
  });

  it('two management-api processes running their own loops: a regressing treatment is rolled back once, a healthy one advances and completes once', async () => {
    const bad = await bound('proc-bad', 'proc_bad', { stages: [{ percent: 10 }, { percent: 100 }], guards: { errorRate: 0.02 } });
    const good = await bound('proc-good', 'proc_good', { stages: [{ percent: 10, minRequests: 30 }, { percent: 100 }], guards: { errorRate: 0.02, p95LatencyMs: 400 } });
    const env = { ...a.te.env, SCHEDULED_CHANGES_POLL_MS: '20', ROLLOUT_CHECK_MS: '50' };
    // Started through ts-node: slow on a loaded machine, so a generous start timeout.
    const procs = await Promise.all([startManagementApiProcess(env, 180_000), startManagementApiProcess(env, 180_000)]);
    try {
      const status = async (productKey: string) => (await a.sql<{ status: string }>(`SELECT status FROM rollout_states WHERE tenant_id = $1 AND product_key = $2`, [owner.tenantId, productKey])).rows[0]?.status;
      await waitFor(async () => (await status('proc_bad')) === 'running' && (await status('proc_good')) === 'running', 30_000, 20);
      await traffic('proc_bad', 'proc-bad', bad.small, 400, 2, 200, 600);
      await traffic('proc_bad', 'proc-bad', bad.large, 60, 20, 200, 600);
      await traffic('proc_good', 'proc-good', good.small, 400, 2, 200, 600);
      await traffic('proc_good', 'proc-good', good.large, 60, 0, 200, 600);
      await waitFor(async () => (await status('proc_bad')) === 'rolled_back' && (await status('proc_good')) === 'completed', 30_000, 20);
      // Both loops kept polling meanwhile: still one decision of each kind, and one flag write per decision that writes.
      await new Promise((r) => setTimeout(r, 500));
      // Holds (while there was no traffic to compare) are logged once per reason; the writing decisions once each.
      const log = async (productKey: string) =>
        (await decisions(productKey)).decisions
          .map((d: { decision: string }) => d.decision)
          .filter((d: string) => d !== 'held')
          .reverse();
      expect(await log('proc_bad')).toEqual(['started', 'rolled_back']);
      expect(await log('proc_good')).toEqual(['started', 'advanced', 'completed']);
      const writes = async (flagKey: string) => (await a.sql<{ n: number }>(`SELECT count(*)::int AS n FROM flag_audit WHERE tenant_id = $1 AND flag_key = $2 AND action = 'update'`, [owner.tenantId, flagKey])).rows[0]!.n;
      expect([await writes('proc-bad'), await writes('proc-good')]).toEqual([2, 2]);
      expect(await weights('proc-bad')).toEqual([['small', 100_000], ['large', 0]]);
      expect(await weights('proc-good')).toEqual([['small', 0], ['large', 100_000]]);
    } finally {
      await Promise.all(procs.map((p) => p.stop()));
    }
  }, 300_000);

  it("is tenant-scoped: another tenant cannot read a binding's rollout", async () => {
    const stranger = await a.signUp();
    expect((await a.call('GET', '/api/gateway/bindings/core/rollout', { token: stranger.idToken, tenant: stranger.tenantId })).status).toBe(404);
    expect((await a.call('GET', '/api/gateway/bindings/core/rollout', { token: stranger.idToken, tenant: owner.tenantId })).status).toBe(403);
  });
});
