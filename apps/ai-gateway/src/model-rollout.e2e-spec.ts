/**
 * Guarded model rollouts end to end (issue 36), through real parts only: the built gateway serving
 * chat requests of the `openai` client from many end users through the fake model upstream; two
 * built management-api processes on the same database whose rollout loops both run (a short
 * SCHEDULED_CHANGES_POLL_MS and ROLLOUT_CHECK_MS); two JSON flags whose variations name a control
 * and a treatment model, each bound to a product key with a rollout plan through
 * PUT /api/gateway/bindings/{productKey}. The upstream fails every request of one treatment model
 * (FakeModelUpstream.behaveFor): that rollout is rolled back once, by one replica, through one flag
 * write, and the gateway then sends everyone to the control; the other treatment answers like its
 * control: its plan advances a stage and the gateway sends everyone to it. Every wait is a condition.
 * Needs the builds: `npx nx run-many -t build -p management-api,ai-gateway`.
 */
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { DATA_SOURCE } from '@flagship/persistence';
import { type BuiltProcess, freePort, http, waitFor } from '@flagship/testing';
import { type GatewayE2e, NO_RATE_LIMITS, setUpGatewayE2e } from './testing/built-gateway.fixture';
import { equipTenant, type Sql } from './testing/gateway.fixture';

/** One upstream serving three chat models at one price: the control, a treatment that regresses and one that does not. */
const CONTROL = 'chat-stable';
const BROKEN = 'chat-broken';
const NEXT = 'chat-next';
const GATEWAY_MODELS = JSON.stringify([CONTROL, BROKEN, NEXT].map((id) => ({ id, inputPer1k: 1000, outputPer1k: 2000 })));

/** Half of the traffic to the treatment at once, so that a few dozen requests judge it; at least 10 requests per arm are needed (MIN_ARM_REQUESTS). */
const REGRESSING_PLAN = { stages: [{ percent: 50, minRequests: 10, minMinutes: 0 }, { percent: 100 }], guards: { errorRate: 0.1 } };
/** Its last stage waits for more requests than the test sends: after the advance, the plan holds there. */
const HEALTHY_PLAN = { stages: [{ percent: 50, minRequests: 10, minMinutes: 0 }, { percent: 100, minRequests: 1_000_000 }], guards: { errorRate: 0.1, p95LatencyMs: 2_000 } };

interface Decision {
  decision: string;
  percent: number;
  reason: string;
  figures: { control: { requests: number; errorRate: number | null }; treatment: { requests: number; errorRate: number | null } } | null;
}
interface RolloutView {
  state: { status: string; stage: number } | null;
  decisions: Decision[];
}
/** What one request got: the model that answered, or the error status. */
type Served = { user: string; model: string } | { user: string; status: number | undefined };

describe('guarded model rollouts through the built gateway, two management-api processes deciding', () => {
  let e2e: GatewayE2e;
  let ds: Sql;
  let gateway: BuiltProcess;
  let apis: BuiltProcess[];
  let tenant: string;
  let headers: Record<string, string>;
  let clients: Record<'core' | 'helpdesk', OpenAI>;
  let users = 0;

  beforeAll(async () => {
    e2e = await setUpGatewayE2e();
    ds = e2e.issuer.app.get<Sql>(DATA_SOURCE);
    // One model failing must not open the in-house provider's circuit (it counts failures per
    // provider, not per model), or the control's requests would fail with it.
    const gatewayEnv = { ...NO_RATE_LIMITS, GATEWAY_MODELS, PROVIDER_MAX_RETRIES: '0', PROVIDER_BREAKER_FAILURES: '1000000' };
    // Replicas behind one public address: the dev IdP's tokens from one verify at the other.
    const port = await freePort();
    const apiEnv = { SCHEDULED_CHANGES_POLL_MS: '50', ROLLOUT_CHECK_MS: '200', RATE_LIMIT_FREE: '100000', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
    let api0: BuiltProcess;
    let api1: BuiltProcess;
    [gateway, api0, api1] = await Promise.all([e2e.startGateway(gatewayEnv), e2e.startManagementApi(apiEnv, port), e2e.startManagementApi(apiEnv)]);
    apis = [api0, api1];

    const email = `rollout-${randomBytes(4).toString('hex')}@flagship.test`;
    const account = await http(`${apis[0]!.url}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'long-enough-1' } });
    const signup = await http(`${apis[1]!.url}/api/v1/auth/signup`, { method: 'POST', json: { idToken: account.body.idToken, email, password: 'long-enough-1' } });
    expect(signup.status).toBe(201);
    tenant = signup.body.data.canonical_tenant_id;
    headers = { authorization: `Bearer ${account.body.idToken}`, 'x-tenant-id': tenant };
    await equipTenant(ds, tenant, {
      plan: 'premium',
      entitlements: [
        { productKey: 'core', tier: 'enterprise' },
        { productKey: 'helpdesk', tier: 'enterprise' },
      ],
      balance: 1_000_000_000,
    });
    const token = await e2e.issue(tenant, ['core', 'helpdesk']);
    const client = (productKey: string) =>
      new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: token, defaultHeaders: { 'x-service-product-key': productKey }, maxRetries: 0, timeout: 20_000 });
    clients = { core: client('core'), helpdesk: client('helpdesk') };
  }, 90_000);

  afterAll(() => e2e?.close());

  /** A management-api call, on the replica `i` (the replicas take turns). */
  const api = (method: string, path: string, json?: unknown, i = 0) => http(`${apis[i % 2]!.url}${path}`, { method, headers, ...(json === undefined ? {} : { json }) });
  const rollout = async (productKey: string): Promise<RolloutView> => (await api('GET', `/api/gateway/bindings/${productKey}/rollout`)).body;
  const writingDecisions = (view: RolloutView) => view.decisions.filter((d) => d.decision !== 'held').map((d) => d.decision).reverse();

  /** A JSON flag whose variations name the control (its default, so the off value) and `treatment`, on, bound to `productKey` with `plan`. */
  async function bind(flagKey: string, productKey: string, treatment: string, plan: object): Promise<void> {
    const created = await api('POST', '/api/flags', {
      key: flagKey,
      name: flagKey,
      type: 'json',
      enabled: true,
      defaultValue: { model: CONTROL },
      flag_variations: [
        { name: 'control', value: { model: CONTROL } },
        { name: 'treatment', value: { model: treatment } },
      ],
    });
    expect(created.status === 201 || created.text).toBe(true);
    const bound = await api('PUT', `/api/gateway/bindings/${productKey}`, { flagKey, rolloutPlan: plan }, 1);
    expect((bound.status >= 200 && bound.status < 300) || bound.text).toBe(true);
  }

  /** `n` requests of new end users on `productKey`'s route, five at a time. */
  async function traffic(productKey: 'core' | 'helpdesk', n: number, named?: string[]): Promise<Served[]> {
    const todo = named ?? Array.from({ length: n }, () => `user-${users++}`);
    const out: Served[] = [];
    const worker = async () => {
      for (let user = todo.shift(); user !== undefined; user = todo.shift()) {
        out.push(
          await clients[productKey].chat.completions.create({ model: CONTROL, messages: [{ role: 'user', content: 'which model are you' }], max_tokens: 8, user }).then(
            (r) => ({ user, model: r.model }),
            (e: { status?: number }) => ({ user, status: e.status }),
          ),
        );
      }
    };
    await Promise.all(Array.from({ length: 5 }, worker));
    return out;
  }

  /** Sends traffic on `productKey` twenty requests at a time until `done` holds (at most 30 s): what was served. */
  async function driveUntil(productKey: 'core' | 'helpdesk', done: (view: RolloutView) => boolean): Promise<Served[]> {
    const served: Served[] = [];
    await waitFor(
      async () => {
        if (done(await rollout(productKey))) return true;
        served.push(...(await traffic(productKey, 20)));
        return false;
      },
      30_000,
      0,
    );
    return served;
  }

  const modelOf = (s: Served): string => ('model' in s ? s.model : `status ${s.status}`);

  /**
   * Once `user`'s request on `productKey` is answered by `model` (the flag change reached the
   * gateway; at most 5 s), what 40 new users' requests are answered by.
   */
  async function servedOnceChanged(productKey: 'core' | 'helpdesk', user: string, model: string): Promise<string[]> {
    await waitFor(async () => (await traffic(productKey, 1, [user])).map(modelOf)[0] === model, 5_000);
    return (await traffic(productKey, 40)).map(modelOf);
  }

  /** The flag's audit trail (oldest first), as [action, actor, the rollout's decision]. */
  const auditOf = async (flagKey: string) =>
    ((await api('GET', `/api/flags/${flagKey}/audit`)).body as Array<{ action: string; actor: string; changes: { decision?: string } }>).map((a) => [a.action, a.actor, a.changes.decision ?? null]);
  const weightsOf = async (flagKey: string) =>
    ((await api('GET', `/api/flags/${flagKey}`)).body.variations as Array<{ name: string; weight: number }>).map((v) => [v.name, v.weight]);

  it('a treatment whose upstream fails is rolled back once, and the gateway then serves the control to everyone; one that answers well advances a stage', async () => {
    e2e.fake.behaveFor(BROKEN, { failure: { kind: 'status', status: 500 } });
    await bind('core-model', 'core', BROKEN, REGRESSING_PLAN);
    await bind('helpdesk-model', 'helpdesk', NEXT, HEALTHY_PLAN);
    // Either replica starts each plan (50% to the treatment): only then does traffic count.
    await waitFor(async () => (await rollout('core')).state?.status === 'running' && (await rollout('helpdesk')).state?.status === 'running', 15_000);

    const [regressed, healthy] = await Promise.all([
      driveUntil('core', (v) => v.state?.status === 'rolled_back'),
      driveUntil('helpdesk', (v) => v.state?.stage === 1),
    ]);
    // Both arms were served while the stage ran: the broken model's requests failed (502), the control's did not.
    expect(regressed.some((s) => 'status' in s && s.status === 502)).toBe(true);
    expect(regressed.every((s) => ('model' in s ? s.model === CONTROL : s.status === 502))).toBe(true);
    expect(new Set(healthy.map(modelOf))).toEqual(new Set([CONTROL, NEXT]));

    // The rollback reached the gateway (change feed): a user the treatment had failed now gets the
    // control, and so does every later request, whoever sends it.
    const failedUser = regressed.find((s) => 'status' in s)!.user;
    expect(await servedOnceChanged('core', failedUser, CONTROL)).toEqual(Array(40).fill(CONTROL));
    // The advance reached it too: a user the control had served now gets the treatment, as does everyone.
    const controlUser = healthy.find((s) => 'model' in s && s.model === CONTROL)!.user;
    expect(await servedOnceChanged('helpdesk', controlUser, NEXT)).toEqual(Array(40).fill(NEXT));

    // Both replicas kept polling all along: one decision of each kind, taken by one of them.
    const core = await rollout('core');
    expect(core.state).toMatchObject({ status: 'rolled_back', stage: 0 });
    expect(writingDecisions(core)).toEqual(['started', 'rolled_back']);
    const rolledBack = core.decisions.find((d) => d.decision === 'rolled_back')!;
    expect(rolledBack.reason).toMatch(/^error rate over the control by 100\.00 points \(95% interval/);
    expect(rolledBack.figures?.treatment.errorRate).toBe(1);
    expect(rolledBack.figures?.control.errorRate).toBe(0);
    expect(rolledBack.figures!.treatment.requests).toBeGreaterThanOrEqual(10);
    expect(rolledBack.figures!.control.requests).toBeGreaterThanOrEqual(10);
    // One flag write for the start and one for the rollback, each versioned and audited as the rollout.
    expect(await weightsOf('core-model')).toEqual([
      ['control', 100_000],
      ['treatment', 0],
    ]);
    expect((await api('GET', '/api/flags/core-model')).headers.get('etag')).toBe('"3.1"');
    expect(await auditOf('core-model')).toEqual([
      ['create', expect.stringMatching(/^user:/), null],
      ['update', 'rollout:core', null],
      ['rollout', 'rollout:core', 'started'],
      ['update', 'rollout:core', null],
      ['rollout', 'rollout:core', 'rolled_back'],
    ]);

    const helpdesk = await rollout('helpdesk');
    expect(helpdesk.state).toMatchObject({ status: 'running', stage: 1 });
    expect(writingDecisions(helpdesk)).toEqual(['started', 'advanced']);
    expect(helpdesk.decisions.find((d) => d.decision === 'advanced')!.reason).toBe('stage 1 (50%) held within the guards; on to 100%');
    expect(await weightsOf('helpdesk-model')).toEqual([
      ['control', 0],
      ['treatment', 100_000],
    ]);
    expect((await api('GET', '/api/flags/helpdesk-model')).headers.get('etag')).toBe('"3.1"');
    expect((await auditOf('helpdesk-model')).filter(([action]) => action !== 'create')).toEqual([
      ['update', 'rollout:helpdesk', null],
      ['rollout', 'rollout:helpdesk', 'started'],
      ['update', 'rollout:helpdesk', null],
      ['rollout', 'rollout:helpdesk', 'advanced'],
    ]);
  }, 90_000);
});
