import { evaluateFlag, type FlagDefinition } from '@flagship/flag-evaluation';
import { FlagStore } from '@flagship/flag-store';
import { FakeFlagStoreRepository } from '@flagship/flag-store/testing';
import type { GatewayBinding } from '../bindings/gateway-bindings.repository';
import { parseModelCatalogue } from '../models/model-catalogue';
import { type GatewayRequest, parseGatewayRequest, type RequestRules } from '../openai/openai-request';
import type { TenantContext } from '../tenants/tenant-context.repository';
import { applyPlan, BindingStep, endUserOf, type RouteCaller, type RoutePlan } from './binding.step';
import { ProviderPermissionStep } from './provider-permission.step';

const models = parseModelCatalogue('');
const rules: RequestRules = { models, defaultMaxOutputTokens: 1024, imageTokens: 50_000, media: { maxBytes: 5 * 1024 * 1024, allowLoopback: false } };
const TENANT_ID = '00000000-0000-4000-8000-00000000000a';
const tenant = (more: Partial<TenantContext> = {}): TenantContext => ({
  id: TENANT_ID,
  plan: 'premium',
  subscriptionStatus: 'active',
  zeroRated: false,
  hostedProviderAllowed: false,
  entitlements: [],
  paused: false,
  ...more,
});
const caller = (more: Partial<RouteCaller> = {}): RouteCaller => ({ clientId: 'ffc_client', productKey: 'core', tenant: tenant(), ...more });
const chat = (body: Record<string, unknown> = {}): GatewayRequest =>
  parseGatewayRequest('chat.completions', JSON.stringify({ model: 'fake-chat-1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500, ...body }), rules);

/** A JSON flag: off serves `control`; on, a 50/50 rollout of control and treatment by the user's key. */
const rollout = (key = 'model-rollout', variations?: FlagDefinition['variations']): FlagDefinition => ({
  key,
  type: 'json',
  defaultValue: { model: 'fake-chat-1' },
  variations: variations ?? [
    { id: 'control', name: 'Control', value: { model: 'fake-chat-1' }, weight: 50 },
    { id: 'treatment', name: 'Treatment', value: { model: 'gpt-4o-mini', params: { temperature: 0.2, max_tokens: 100 } }, weight: 50 },
  ],
  offValue: { model: 'fake-chat-1' },
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
  salt: 'model-rollout-salt',
  version: 7,
});

describe('BindingStep: a product key bound to a JSON flag routes each request by its variation', () => {
  let flags: FakeFlagStoreRepository;
  let store: FlagStore;
  let binding: GatewayBinding | null;
  let step: BindingStep;

  /** The binding as Postgres would hold it, on a new step (a binding is cached; the change feed is another spec's). */
  const bind = (more: Partial<GatewayBinding> = {}): void => {
    binding = { flagKey: 'model-rollout', modelAlias: null, environment: 'production', spendCaps: new Map(), version: 1, ...more };
    step = newStep();
  };
  const newStep = (): BindingStep =>
    new BindingStep({ find: async () => binding }, store, new ProviderPermissionStep({ defaultProvider: 'inhouse', hostedProducts: ['studio'], hostedEmergency: false }), undefined, {
      models,
      ttlMs: 60_000,
    });
  const plan = async (request: GatewayRequest, headers: Record<string, string> = {}, who = caller()): Promise<RoutePlan | undefined> =>
    step.plan(headers, who, request, ['inhouse']);

  beforeEach(() => {
    flags = new FakeFlagStoreRepository();
    store = new FlagStore(flags, undefined, { reconcileMs: 60_000, maxEntries: 10 });
    binding = null;
    step = newStep();
    flags.put(TENANT_ID, 'production', rollout());
  });

  it('leaves an unbound product key alone (nothing recorded)', async () => {
    expect(await plan(chat())).toBeUndefined();
  });

  it("serves the variation libs/flag-evaluation gives the multi-kind context {user: end user else client, tenant, client, product}, for 200 users", async () => {
    bind();
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const user = `user-${i}`;
      const p = (await plan(chat({ user })))!;
      const expected = evaluateFlag(rollout(), { kind: 'multi', user: { key: user }, tenant: { key: TENANT_ID }, client: { key: 'ffc_client' }, product: { key: 'core' } });
      expect([p.attribution.variation, p.model.id]).toEqual([expected.variationId, (expected.value as { model: string }).model]);
      expect(p.attribution).toMatchObject({ flagKey: 'model-rollout', flagVersion: 7, contextKind: 'multi', reason: null });
      seen.add(p.attribution.variation!);
    }
    expect([...seen].sort()).toEqual(['control', 'treatment']);
  });

  it('takes the end user from x-service-end-user before the body, and the client id when there is none', async () => {
    bind();
    const variationOf = (key: string): string | undefined =>
      evaluateFlag(rollout(), { kind: 'multi', user: { key }, tenant: { key: TENANT_ID }, client: { key: 'ffc_client' }, product: { key: 'core' } }).variationId;
    // Users whose buckets differ, so the assertion tells which key was used.
    const users = Array.from({ length: 50 }, (_, i) => `u${i}`);
    const a = users.find((u) => variationOf(u) === 'control')!;
    const b = users.find((u) => variationOf(u) === 'treatment')!;
    expect((await plan(chat({ user: a }), { 'x-service-end-user': b }))!.attribution.variation).toBe('treatment');
    expect((await plan(chat({ user: b })))!.attribution.variation).toBe('treatment');
    expect((await plan(chat()))!.attribution.variation).toBe(variationOf('ffc_client'));
    // A key longer than 256 characters is no key: the client's id stands in (as with none).
    const long = 'x'.repeat(257);
    expect(endUserOf({ 'x-service-end-user': long }, chat({ user: long }))).toBeUndefined();
    expect(endUserOf({ 'x-service-end-user': ' ' }, chat({ user: a }))).toBe(a);
  });

  it("applies the variation: its model (and prices), its sampling overrides, its max_tokens cap (never a raise), and reserves the capped output", async () => {
    bind();
    flags.put(TENANT_ID, 'production', { ...rollout(), variations: rollout().variations.map((v) => ({ ...v, weight: v.id === 'treatment' ? 1 : 0 })) });
    store.invalidate(TENANT_ID, 'production');
    const request = chat({ temperature: 1.5, n: 2 });
    const p = (await plan(request))!;
    expect([p.attribution.variation, p.outputTokens]).toEqual(['treatment', 200]);
    applyPlan(request, p);
    expect([request.model.id, request.body['model'], request.body['temperature'], request.body['max_tokens'], request.outputTokens]).toEqual(['gpt-4o-mini', 'gpt-4o-mini', 0.2, 100, 200]);
    const small = chat({ max_tokens: 10 });
    applyPlan(small, (await plan(small))!);
    expect([small.body['max_tokens'], small.outputTokens]).toEqual([10, 10]);
  });

  it('notes each evaluation of the bound flag for the stale-flags list, and none for a request it does not route', async () => {
    const noted: string[] = [];
    bind();
    step = new BindingStep({ find: async () => binding }, store, new ProviderPermissionStep({ defaultProvider: 'inhouse', hostedProducts: [], hostedEmergency: false }), undefined, {
      models,
      ttlMs: 60_000,
      recorder: { record: (tenantId, environment, flagKey) => noted.push(`${tenantId} ${environment} ${flagKey}`) },
    });
    await plan(chat());
    await plan(chat({ model: 'gpt-4o' }));
    expect(noted).toEqual([`${TENANT_ID} production model-rollout`, `${TENANT_ID} production model-rollout`]);
    // Embeddings are not routed by a binding without an alias: nothing evaluated, nothing noted.
    await plan(parseGatewayRequest('embeddings', JSON.stringify({ model: 'fake-embed-1', input: 'x' }), rules));
    expect(noted).toHaveLength(2);
  });

  it('routes by model alias only the requests naming it, and embeddings only by alias', async () => {
    bind({ modelAlias: 'gpt-4o' });
    expect(await plan(chat())).toBeUndefined();
    expect((await plan(chat({ model: 'gpt-4o' })))?.attribution.flagKey).toBe('model-rollout');
    bind();
    expect(await plan(parseGatewayRequest('embeddings', JSON.stringify({ model: 'fake-embed-1', input: 'x' }), rules))).toBeUndefined();
  });

  describe('guard rails: the route default (the model asked for), with the reason recorded, never an error', () => {
    const fallback = async (reason: string, request = chat(), who = caller()) => {
      const p = (await plan(request, {}, who))!;
      expect([p.model, p.providers, p.attribution.variation, p.attribution.reason]).toEqual([request.model, ['inhouse'], null, reason]);
      return p;
    };

    it('a flag missing from the environment, or not JSON', async () => {
      bind({ flagKey: 'nope' });
      await fallback('flag_not_found');
      flags.put(TENANT_ID, 'production', { ...rollout('a-boolean'), type: 'boolean', defaultValue: true, variations: [{ id: 't', name: 'T', value: true, weight: 1 }] });
      store.invalidate(TENANT_ID, 'production');
      bind({ flagKey: 'a-boolean' });
      expect((await fallback('flag_not_json')).attribution.flagVersion).toBe(7);
    });

    it('a variation that is not a model route, names a model outside the catalogue, or a provider the tenant may not use', async () => {
      bind();
      const only = (value: unknown) => {
        flags.put(TENANT_ID, 'production', rollout('model-rollout', [{ id: 'only', name: 'Only', value: value as never, weight: 1 }]));
        store.invalidate(TENANT_ID, 'production');
      };
      only({ model: 'fake-chat-1', params: { n: 9 } });
      await fallback('variation_malformed');
      only('fake-chat-1');
      await fallback('variation_malformed');
      only({ model: 'not-in-the-catalogue' });
      await fallback('model_not_allowed');
      only({ model: 'gpt-4o', provider: 'hosted' });
      await fallback('provider_restricted');
      // Allowed the tenant, or the product (PROVIDER_HOSTED_PRODUCTS): served by hosted alone.
      expect((await plan(chat(), {}, caller({ tenant: tenant({ hostedProviderAllowed: true }) })))!.providers).toEqual(['hosted']);
      expect((await plan(chat(), {}, caller({ productKey: 'studio' })))!.providers).toEqual(['hosted']);
    });
  });

  describe('spend caps', () => {
    it("carries the served variation's cap and, as its control, the flag's off variation", async () => {
      bind({ spendCaps: new Map([['treatment', 5000]]) });
      const users = Array.from({ length: 40 }, (_, i) => `u${i}`);
      const plans = await Promise.all(users.map((user) => plan(chat({ user }))));
      const treated = plans.find((p) => p!.attribution.variation === 'treatment')!;
      expect([treated.cap, treated.control!.attribution, treated.control!.model.id]).toEqual([
        5000,
        { flagKey: 'model-rollout', flagVersion: 7, variation: 'control', contextKind: 'multi', reason: 'spend_cap' },
        'fake-chat-1',
      ]);
      expect(plans.find((p) => p!.attribution.variation === 'control')!.cap).toBeUndefined();
    });

    it('a capped control falls to the route default past its cap', async () => {
      bind({ spendCaps: new Map([['control', 0]]) });
      const users = Array.from({ length: 40 }, (_, i) => `u${i}`);
      const control = (await Promise.all(users.map((user) => plan(chat({ user }))))).find((p) => p!.attribution.variation === 'control')!;
      expect([control.control!.attribution.variation, control.control!.attribution.reason]).toEqual([null, 'spend_cap']);
    });
  });
});
