import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { basicLogger, FileDataSourceFactory, init, type LDClient } from '@launchdarkly/node-server-sdk';
import OpenAI from 'openai';
import type { DataSource } from 'typeorm';
import { evaluateFlag, type FlagDefinition } from '@flagship/flag-evaluation';
import { EvaluationRecorder } from '@flagship/flag-store';
import { DATA_SOURCE } from '@flagship/persistence';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import type { RunningApp } from '@flagship/service-kit';
import { http } from '@flagship/testing';
import type { GatewayPipeline } from './gateway.pipeline';
import { createTenant, type GatewayIntegration, type IssueToken, startGatewayIntegration } from './testing/gateway.fixture';

/** The bound flag: one user targeted, one OAuth client ruled to the control, 30/70 by user key for everyone else; off serves the control. */
const CONTROL = { model: 'fake-chat-1' };
const TREATMENT = { model: 'gpt-4o-mini', params: { temperature: 0.3, max_tokens: 64 } };
const flagRow = (ruledClient: string) => ({
  variations: [
    { id: 'control', name: 'Control', value: CONTROL, weight: 30 },
    { id: 'treatment', name: 'Treatment', value: TREATMENT, weight: 70 },
  ],
  targets: [{ variationId: 'treatment', values: ['vip-user'], contextKind: 'user' }],
  rules: [{ id: 'ruled-client', clauses: [{ attribute: 'key', contextKind: 'client', op: 'in', values: [ruledClient], negate: false }], variationId: 'control' }],
  salt: 'gateway-routes',
});

/** The same flag in LaunchDarkly's SDK data format (variation indexes, weights out of 100,000). */
const ldFlag = (ruledClient: string, version: number) => ({
  key: 'model-rollout',
  version,
  on: true,
  salt: 'gateway-routes',
  variations: [CONTROL, TREATMENT],
  offVariation: 0,
  targets: [{ variation: 1, values: ['vip-user'] }],
  contextTargets: [],
  rules: [{ id: 'ruled-client', clauses: [{ contextKind: 'client', attribute: 'key', op: 'in', values: [ruledClient], negate: false }], variation: 0, trackEvents: false }],
  fallthrough: { rollout: { variations: [{ variation: 0, weight: 30_000 }, { variation: 1, weight: 70_000 }] } },
  prerequisites: [],
  trackEvents: false,
  trackEventsFallthrough: false,
  clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false },
});

interface Attribution {
  request_id: string;
  model: string;
  flag_key: string | null;
  flag_version: number | null;
  variation: string | null;
  context_kind: string | null;
  route_reason: string | null;
  status: string;
}

/**
 * Model routes by flag (issue 36) through the real SDKs against the started gateway and the fake
 * upstream: the variation each request is routed to agrees with libs/flag-evaluation and with
 * LaunchDarkly's Node SDK for the same multi-kind contexts, on every ingress; the ledger row
 * records it; a flag change or an unbinding reaches the running gateway through its announcement; a broken
 * binding serves the asked model, never a 500; `POST /v1/feedback` scores only the tenant's requests.
 */
describe('ai-gateway: a product key bound to a flag routes by its variation', () => {
  let setup: GatewayIntegration | undefined;
  let gw: RunningApp & { pipeline: GatewayPipeline };
  let issue: IssueToken;
  let ds: DataSource;
  let tenant: string;
  let ld: LDClient;
  let dir: string;
  let definition: FlagDefinition;
  const ruledClient = 'ffc_ruledclient00000000';
  const client = 'ffc_someclient000000000';

  /** The flag as management-api writes it (both rows), returning the evaluator's definition of it as stored. */
  const writeFlag = async (tenantId: string, key: string, type = 'json'): Promise<void> => {
    const row = flagRow(ruledClient);
    await ds.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production') ON CONFLICT DO NOTHING`, [tenantId]);
    const [{ id }] = await ds.query(
      `INSERT INTO flags (tenant_id, key, name, type, default_value, variations) VALUES ($1, $2, $2, $3, $4::jsonb, $5::jsonb) RETURNING id`,
      [tenantId, key, type, type === 'json' ? JSON.stringify(CONTROL) : 'true', type === 'json' ? JSON.stringify(row.variations) : JSON.stringify([{ id: 't', name: 'T', value: true, weight: 1 }])],
    );
    await ds.query(`INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled, off_value, targets, rules, salt) VALUES ($1, $2, 'production', true, $3::jsonb, $4::jsonb, $5::jsonb, $6)`, [
      tenantId,
      id,
      type === 'json' ? JSON.stringify(CONTROL) : 'false',
      JSON.stringify(type === 'json' ? row.targets : []),
      JSON.stringify(type === 'json' ? row.rules : []),
      row.salt,
    ]);
  };
  const bind = (tenantId: string, flagKey: string, more: { spendCaps?: Record<string, number> } = {}) =>
    ds.query(`INSERT INTO gateway_bindings (tenant_id, product_key, flag_key, spend_caps) VALUES ($1, 'core', $2, $3::jsonb)`, [tenantId, flagKey, more.spendCaps ? JSON.stringify(more.spendCaps) : null]);
  const rowOf = async (requestId: string | null | undefined): Promise<Attribution> => {
    await gw.pipeline.drain();
    const rows: Attribution[] = await ds.query(
      `SELECT request_id, model, flag_key, flag_version, variation, context_kind, route_reason, status FROM usage_ledger WHERE tenant_id = $1 AND request_id = $2`,
      [tenant, requestId],
    );
    expect(rows).toHaveLength(1);
    return rows[0]!;
  };
  const contextOf = (user: string, clientId: string) => ({ kind: 'multi' as const, user: { key: user }, tenant: { key: tenant }, client: { key: clientId }, product: { key: 'core' } });
  /** What libs/flag-evaluation and LaunchDarkly's SDK say, which must be one answer. */
  const expected = async (user: string, clientId: string): Promise<string> => {
    const ours = evaluateFlag(definition, contextOf(user, clientId)).variationId!;
    const theirs = await ld.variationDetail('model-rollout', contextOf(user, clientId), null);
    expect(['control', 'treatment'][theirs.variationIndex!]).toBe(ours);
    return ours;
  };
  const openai = async (clientId = client) =>
    new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(tenant, ['core'], clientId), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });
  const MODEL_OF: Record<string, string> = { control: 'fake-chat-1', treatment: 'gpt-4o-mini' };

  beforeAll(async () => {
    setup = await startGatewayIntegration({ PROVIDER_BREAKER_FAILURES: '1000', GATEWAY_RATE_LIMIT_RPM: '100000' });
    ({ gw, issue } = setup);
    ds = gw.app.get<DataSource>(DATA_SOURCE);
    tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000_000 });
    await writeFlag(tenant, 'model-rollout');
    await bind(tenant, 'model-rollout');
    const [row] = await ds.query(`SELECT f.version AS fv, fe.version AS ev FROM flags f JOIN flag_environments fe ON fe.flag_id = f.id WHERE f.tenant_id = $1 AND f.key = 'model-rollout'`, [tenant]);
    const r = flagRow(ruledClient);
    definition = { key: 'model-rollout', type: 'json', defaultValue: CONTROL, variations: r.variations, enabled: true, offValue: CONTROL, targets: r.targets, rules: r.rules as never, prerequisites: [], salt: r.salt, version: row.fv * 100000 + row.ev };
    dir = mkdtempSync(join(tmpdir(), 'gateway-routes-ld-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ flags: { 'model-rollout': ldFlag(ruledClient, definition.version!) }, segments: {} }));
    ld = init('sdk-gateway-routes-offline', { updateProcessor: new FileDataSourceFactory({ paths: [file] }).getFactory(), sendEvents: false, diagnosticOptOut: true, logger: basicLogger({ level: 'none' }) });
    await ld.waitForInitialization({ timeout: 10 });
  }, 60_000);

  afterAll(async () => {
    ld?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await setup?.close();
  });

  it('Chat Completions (openai SDK): each user routed to the variation both evaluators give, its params applied, the row attributed', async () => {
    const api = await openai();
    const seen = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const user = i === 0 ? 'vip-user' : `user-${i}`;
      const { data, response } = await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hello' }], user, max_tokens: 500 }).withResponse();
      const variation = await expected(user, client);
      expect(data.model).toBe(MODEL_OF[variation]);
      const row = await rowOf(response.headers.get('x-request-id'));
      expect(row).toMatchObject({ model: MODEL_OF[variation], flag_key: 'model-rollout', flag_version: definition.version, variation, context_kind: 'multi', route_reason: null, status: 'succeeded' });
      seen.add(variation);
    }
    expect([...seen].sort()).toEqual(['control', 'treatment']);
    // The treatment's params reach the upstream: its temperature, and max_tokens capped at 64.
    await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hello' }], user: 'vip-user', max_tokens: 500, temperature: 1.9 });
    expect(setup!.fake.lastBody.chat).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.3, max_tokens: 64 });
    // The gateway is one of the flag's evaluators: the stale-flags list hears of it (written once a minute; flushed here).
    await gw.app.get(EvaluationRecorder).flush();
    const evaluated: { last_evaluated_at: Date }[] = await ds.query(
      `SELECT last_evaluated_at FROM flag_evaluations WHERE tenant_id = $1 AND environment_key = 'production' AND flag_key = 'model-rollout'`,
      [tenant],
    );
    expect(evaluated).toHaveLength(1);
    expect(Date.now() - evaluated[0]!.last_evaluated_at.getTime()).toBeLessThan(120_000);
  });

  it('a stream is routed the same, and its row records the time to its first token', async () => {
    const api = await openai();
    setup!.fake.behave({ firstByteDelayMs: 40 });
    const { data: stream, response } = await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'one two three' }], user: 'vip-user', stream: true }).withResponse();
    let model = '';
    for await (const chunk of stream) model = chunk.model;
    setup!.fake.reset();
    expect(model).toBe('gpt-4o-mini');
    await gw.pipeline.drain();
    const [row] = await ds.query(`SELECT variation, first_token_ms, latency_ms FROM usage_ledger WHERE tenant_id = $1 AND request_id = $2`, [tenant, response.headers.get('x-request-id')]);
    expect(row.variation).toBe('treatment');
    expect(row.first_token_ms).toBeGreaterThanOrEqual(40);
    expect(row.first_token_ms).toBeLessThanOrEqual(row.latency_ms);
  });

  it("the OAuth client is a context kind: the rule on this client routes all its users to the control, as LaunchDarkly's SDK says", async () => {
    const api = await openai(ruledClient);
    for (const user of ['vip-user', 'user-3', 'user-4']) {
      const { response } = await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], user }).withResponse();
      const variation = await expected(user, ruledClient);
      expect((await rowOf(response.headers.get('x-request-id'))).variation).toBe(variation);
    }
  });

  it('Messages (@anthropic-ai/sdk, metadata.user_id) and Responses (user) and the x-service-end-user header route the same way', async () => {
    const token = await issue(tenant, ['core'], client);
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: token, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });
    const api = await openai();
    for (let i = 0; i < 8; i++) {
      const user = `anthropic-user-${i}`;
      const { data, response } = await anthropic.messages.create({ model: 'fake-chat-1', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], metadata: { user_id: user } }).withResponse();
      const variation = await expected(user, client);
      expect(data.model).toBe(MODEL_OF[variation]);
      expect((await rowOf(response.headers.get('x-request-id'))).variation).toBe(variation);
      const responses = await api.responses.create({ model: 'fake-chat-1', input: 'hi', user }).withResponse();
      expect((await rowOf(responses.response.headers.get('x-request-id'))).variation).toBe(variation);
      const header = await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-service-end-user': user } }).withResponse();
      expect((await rowOf(header.response.headers.get('x-request-id'))).variation).toBe(variation);
    }
  });

  it('a flag turned off reaches the running gateway through the change feed: every user then gets the control', async () => {
    const api = await openai();
    const treated = ['vip-user'];
    await ds.query(`UPDATE flag_environments SET enabled = false, version = version + 1, updated_at = clock_timestamp() WHERE tenant_id = $1`, [tenant]);
    const started = Date.now();
    await gw.app.get<PubSub>(PUBSUB).publish(CHANNELS.flagChanged, { tenantId: tenant, environment: 'production', flagKey: 'model-rollout' });
    // The gateway's flag store reconciles every 30 s: within 5 s only the announcement can reach it.
    // How soon is not asserted: on a shared machine that measures the load.
    let variation: string | null = 'treatment';
    while (variation !== 'control' && Date.now() - started < 5000) {
      const { response } = await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], user: treated[0] }).withResponse();
      variation = (await rowOf(response.headers.get('x-request-id'))).variation;
    }
    expect(variation).toBe('control');
    await ds.query(`UPDATE flag_environments SET enabled = true, version = version + 1, updated_at = clock_timestamp() WHERE tenant_id = $1`, [tenant]);
    await gw.app.get<PubSub>(PUBSUB).publish(CHANNELS.flagChanged, { tenantId: tenant, environment: 'production', flagKey: 'model-rollout' });
  });

  it('a binding to a flag that is not JSON, or missing, serves the model asked for and records why (never a 500); unbinding reaches the gateway through its announcement', async () => {
    const other = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000_000 });
    await writeFlag(other, 'a-boolean', 'boolean');
    await bind(other, 'a-boolean');
    const api = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(other, ['core'], client), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
    const reasonOf = async (): Promise<Pick<Attribution, 'model' | 'flag_key' | 'variation' | 'route_reason'>> => {
      const { data, response } = await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      expect(data.model).toBe('fake-chat-1');
      await gw.pipeline.drain();
      const [row] = await ds.query(`SELECT model, flag_key, variation, route_reason FROM usage_ledger WHERE tenant_id = $1 AND request_id = $2`, [other, response.headers.get('x-request-id')]);
      return row;
    };
    expect(await reasonOf()).toEqual({ model: 'fake-chat-1', flag_key: 'a-boolean', variation: null, route_reason: 'flag_not_json' });
    await ds.query(`UPDATE gateway_bindings SET flag_key = 'gone', version = version + 1 WHERE tenant_id = $1`, [other]);
    await gw.app.get<PubSub>(PUBSUB).publish(CHANNELS.gatewayBindingChanged, { tenantId: other, productKey: 'core' });
    // Bindings are held 60 s (GATEWAY_TENANT_CACHE_MS): within 5 s only the announcement can reach the gateway.
    const changed = Date.now();
    let row = await reasonOf();
    while (row.flag_key !== 'gone' && Date.now() - changed < 5000) row = await reasonOf();
    expect(row).toEqual({ model: 'fake-chat-1', flag_key: 'gone', variation: null, route_reason: 'flag_not_found' });
    await ds.query(`DELETE FROM gateway_bindings WHERE tenant_id = $1`, [other]);
    await gw.app.get<PubSub>(PUBSUB).publish(CHANNELS.gatewayBindingChanged, { tenantId: other, productKey: 'core' });
    const unbound = Date.now();
    row = await reasonOf();
    while (row.flag_key !== null && Date.now() - unbound < 5000) row = await reasonOf();
    expect(row).toEqual({ model: 'fake-chat-1', flag_key: null, variation: null, route_reason: null });
  });

  it("POST /v1/feedback scores one of the tenant's requests (a later score replaces it); another tenant's request id is 404; bounds hold", async () => {
    const api = await openai();
    const { response } = await api.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], user: 'user-1' }).withResponse();
    const requestId = response.headers.get('x-request-id')!;
    await gw.pipeline.drain();
    const token = await issue(tenant, ['core'], client);
    const post = (json: unknown, bearer = token) => http<any>(`${gw.url}/v1/feedback`, { method: 'POST', json, headers: { authorization: `Bearer ${bearer}` } });
    expect((await post({ requestId, score: 1, label: 'thumbs' })).body).toEqual({ object: 'feedback', requestId, score: 1, label: 'thumbs' });
    expect((await post({ requestId, score: 0 })).status).toBe(200);
    expect(await ds.query(`SELECT request_id, client_id, score, label FROM usage_feedback WHERE tenant_id = $1`, [tenant])).toEqual([{ request_id: requestId, client_id: client, score: 0, label: null }]);
    const stranger = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }] });
    const theirs = await post({ requestId, score: 1 }, await issue(stranger, ['core']));
    expect([theirs.status, theirs.body.error.code]).toEqual([404, 'request_not_found']);
    for (const bad of [{ requestId, score: 'good' }, { requestId, score: 1e9 }, { requestId, score: 1, label: 'x'.repeat(65) }, { requestId: '', score: 1 }, { score: 1 }]) {
      expect((await post(bad)).status).toBe(400);
    }
    expect((await post({ requestId, score: 1 }, await issue(tenant, ['core'], client, ['flags:read']))).status).toBe(403);
    expect((await post({ requestId, score: 1 }, 'not-a-token')).status).toBe(401);
    expect(await ds.query(`SELECT score FROM usage_feedback WHERE tenant_id = $1`, [tenant])).toEqual([{ score: 0 }]);
  });
});
