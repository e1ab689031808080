import { CHANNELS } from '@flagship/redis';
import { ALICE, flagServices, OTHER_TENANT, TENANT } from '../flags/flag-services.fixture';
import { Quotas, type QuotaSettings } from '../quotas/quotas';
import { FakeQuotasRepository } from '../quotas/quotas.repository.fake';
import { problemOf } from '../testing/problem-of';
import { MAX_SPEND_CAPS, type PutGatewayBindingDto } from './gateway-bindings.dto';
import { FakeGatewayBindingsRepository } from './gateway-bindings.repository.fake';
import { type BindingTenant, GatewayBindingsService } from './gateway-bindings.service';

const QUOTA = 2;
const ACME: BindingTenant = { id: TENANT, hostedProviderAllowed: false };
const ROUTES = [
  { name: 'control', value: { model: 'fake-chat-1' } },
  { name: 'treatment', value: { model: 'gpt-4o-mini', params: { temperature: 0.2, max_tokens: 256 } } },
];

describe('GatewayBindingsService (over the fake repository and the flags service over its fakes)', () => {
  let flags: ReturnType<typeof flagServices>;
  let repo: FakeGatewayBindingsRepository;
  let published: Array<{ channel: string; message: unknown }>;
  let service: GatewayBindingsService;
  /** Variation name -> id of the flag `model-rollout`. */
  let ids: Record<string, string>;

  const jsonFlag = async (key: string, variations: Array<{ name: string; value: unknown }>) =>
    (await flags.service.create(TENANT, undefined, ALICE, { key, name: key, type: 'json', defaultValue: variations[0]!.value as never, flag_variations: variations as never })).flag.variations;
  const put = (productKey: string, dto: PutGatewayBindingDto, opts: { tenant?: BindingTenant; env?: string; ifMatch?: string } = {}) =>
    service.put(opts.tenant ?? ACME, opts.env, ALICE, productKey, dto, opts.ifMatch);

  beforeEach(async () => {
    flags = flagServices();
    repo = new FakeGatewayBindingsRepository();
    published = [];
    const quotas = new Quotas({ QUOTA_GATEWAY_BINDINGS_PER_TENANT: QUOTA } as QuotaSettings, new FakeQuotasRepository({ 'gateway-bindings-per-tenant': (t) => repo.count(t) }), repo.transactions);
    const environments = { resolve: async (_t: string, env: string | undefined) => (env === undefined || env === '' ? 'production' : env) };
    const pubsub = { publish: async (channel: { name: string }, message: unknown) => void published.push({ channel: channel.name, message }) };
    service = new GatewayBindingsService(repo.transactions, repo, environments, flags.service, quotas, pubsub as never, { PRODUCT_KEY_OWN: 'core', internalProductKeys: ['insights', 'helpdesk'] });
    const variations = await jsonFlag('model-rollout', ROUTES);
    ids = Object.fromEntries(variations.map((v) => [v.name, v.id]));
  });

  it('binds a product key to a JSON flag of route variations at version 1, audited and announced; a PUT again replaces it at version 2', async () => {
    const row = await put('core', { flagKey: 'model-rollout', spendCaps: { [ids['treatment']!]: 5_000_000 } });
    expect(row).toMatchObject({ productKey: 'core', flagKey: 'model-rollout', modelAlias: null, environment: 'production', rolloutPlan: null, spendCaps: { [ids['treatment']!]: 5_000_000 }, version: 1 });
    expect(published).toEqual([{ channel: CHANNELS.gatewayBindingChanged.name, message: { tenantId: TENANT, productKey: 'core' } }]);
    const plan = { stages: [{ percent: 5, minRequests: 100 }, { percent: 100 }], guards: { errorRate: 0.02 } };
    const second = await put('core', { flagKey: 'model-rollout', modelAlias: 'fake-chat-1', rolloutPlan: plan }, { ifMatch: '"1"' });
    expect(second).toMatchObject({ modelAlias: 'fake-chat-1', rolloutPlan: plan, spendCaps: null, version: 2 });
    expect((await service.auditTrail(TENANT, 'core')).map((a) => [a.action, a.actor, Object.keys(a.changes).sort()])).toEqual([
      ['create', ALICE.callerId, ['environment', 'flagKey', 'modelAlias', 'rolloutPlan', 'spendCaps']],
      ['update', ALICE.callerId, ['modelAlias', 'rolloutPlan', 'spendCaps']],
    ]);
    // The same body again changes nothing: no version, no audit entry.
    expect((await put('core', { flagKey: 'model-rollout', modelAlias: 'fake-chat-1', rolloutPlan: plan })).version).toBe(2);
    expect(await service.auditTrail(TENANT, 'core')).toHaveLength(2);
  });

  it('refuses (412) an If-Match naming another version, or any If-Match for a product key not bound; changes nothing', async () => {
    expect((await problemOf(put('core', { flagKey: 'model-rollout' }, { ifMatch: '"1"' }))).getStatus()).toBe(412);
    await put('core', { flagKey: 'model-rollout' });
    const stale = await problemOf(put('core', { flagKey: 'model-rollout', modelAlias: 'x' }, { ifMatch: '"7"' }));
    expect([stale.getStatus(), stale.extensions['currentVersion']]).toEqual([412, '"1"']);
    expect((await problemOf(service.remove(TENANT, ALICE, 'core', '"7"'))).getStatus()).toBe(412);
    expect((await service.get(TENANT, 'core')).modelAlias).toBeNull();
  });

  it('refuses (422) a flag that is missing in the environment or not JSON, naming flagKey; and an unknown product key (404)', async () => {
    const missing = await problemOf(put('core', { flagKey: 'nope' }));
    expect([missing.getStatus(), missing.extensions['errors'] as Record<string, string>]).toEqual([422, { flagKey: 'no flag nope in environment production' }]);
    await flags.service.create(TENANT, undefined, ALICE, { key: 'a-boolean', name: 'b', type: 'boolean', defaultValue: false });
    const wrongType = await problemOf(put('core', { flagKey: 'a-boolean' }));
    expect((wrongType.extensions['errors'] as Record<string, string>)['flagKey']).toMatch(/boolean flag; a binding needs a json flag/);
    expect((await problemOf(put('partner_portal', { flagKey: 'model-rollout' }))).getStatus()).toBe(404);
    expect(await repo.list(TENANT)).toEqual([]);
  });

  it('refuses (422) a variation that is not a model route, or names params it may not set, naming the variation', async () => {
    const bad = await jsonFlag('bad-routes', [
      { name: 'ok', value: { model: 'fake-chat-1' } },
      { name: 'no-model', value: { provider: 'inhouse' } },
      { name: 'sneaky', value: { model: 'fake-chat-1', params: { n: 50 } } },
      { name: 'too-hot', value: { model: 'fake-chat-1', params: { temperature: 9 } } },
    ]);
    const errors = (await problemOf(put('core', { flagKey: 'bad-routes' }))).extensions['errors'] as Record<string, string>;
    expect(Object.keys(errors).sort()).toEqual(bad.slice(1).map((v) => `variations.${v.id}`).sort());
    expect(errors[`variations.${bad[2]!.id}`]).toMatch(/params\.n is not a setting a variation may change/);
  });

  it('allows the hosted provider only to a tenant allowed it (the gateway holds the rest of the restriction)', async () => {
    await jsonFlag('hosted-routes', [
      { name: 'inhouse', value: { model: 'fake-chat-1' } },
      { name: 'hosted', value: { model: 'gpt-4o', provider: 'hosted' } },
    ]);
    const refused = await problemOf(put('core', { flagKey: 'hosted-routes' }));
    expect(Object.values(refused.extensions['errors'] as Record<string, string>)).toEqual(['variation hosted names the hosted provider, which this tenant is not allowed']);
    expect((await put('core', { flagKey: 'hosted-routes' }, { tenant: { id: TENANT, hostedProviderAllowed: true } })).version).toBe(1);
  });

  it('refuses spend caps that name no variation of the flag or are not whole micro-credits', async () => {
    const errors = (await problemOf(put('core', { flagKey: 'model-rollout', spendCaps: { ghost: 10, [ids['control']!]: -1 } }))).extensions['errors'];
    expect(errors).toEqual({ 'spendCaps.ghost': 'flag model-rollout has no variation with this id', [`spendCaps.${ids['control']}`]: 'must be an integer of micro-credits, at least 0' });
  });

  it(`caps at most ${MAX_SPEND_CAPS} variations (a bound on what a binding holds and the gateway reads)`, async () => {
    const many = Object.fromEntries(Array.from({ length: MAX_SPEND_CAPS + 1 }, (_, i) => [i === 0 ? ids['control']! : `v${i}`, 1]));
    expect(((await problemOf(put('core', { flagKey: 'model-rollout', spendCaps: many }))).extensions['errors'] as Record<string, string>)['spendCaps']).toBe(`at most ${MAX_SPEND_CAPS} variations may be capped`);
  });

  it('holds a tenant to QUOTA_GATEWAY_BINDINGS_PER_TENANT bindings (409); replacing one is not adding; other tenants do not count', async () => {
    await put('core', { flagKey: 'model-rollout' });
    await put('insights', { flagKey: 'model-rollout' });
    await put('insights', { flagKey: 'model-rollout', modelAlias: 'fake-chat-1' });
    const over = await problemOf(put('helpdesk', { flagKey: 'model-rollout' }));
    expect([over.getStatus(), over.extensions['quota']]).toEqual([409, 'gateway-bindings-per-tenant']);
    expect((await repo.list(TENANT)).map((r) => r.productKey)).toEqual(['core', 'insights']);
  });

  it("keeps tenants apart: another tenant's binding reads as missing, and it cannot bind to this tenant's flag", async () => {
    await put('core', { flagKey: 'model-rollout' });
    expect((await problemOf(service.get(OTHER_TENANT, 'core'))).getStatus()).toBe(404);
    expect((await problemOf(service.remove(OTHER_TENANT, ALICE, 'core'))).getStatus()).toBe(404);
    expect((await problemOf(put('core', { flagKey: 'model-rollout' }, { tenant: { id: OTHER_TENANT, hostedProviderAllowed: true } }))).getStatus()).toBe(422);
    expect(await service.list(OTHER_TENANT)).toEqual([]);
  });

  it('unbinds: 204 once, then 404; audited with what was removed, announced', async () => {
    await put('core', { flagKey: 'model-rollout' });
    published.length = 0;
    await service.remove(TENANT, ALICE, 'core', '"1"');
    expect((await problemOf(service.get(TENANT, 'core'))).getStatus()).toBe(404);
    expect((await problemOf(service.remove(TENANT, ALICE, 'core'))).getStatus()).toBe(404);
    expect((await service.auditTrail(TENANT, 'core')).map((a) => [a.action, a.changes['flagKey']])).toEqual([
      ['create', 'model-rollout'],
      ['delete', 'model-rollout'],
    ]);
    expect(published).toEqual([{ channel: 'gateway-binding-changed', message: { tenantId: TENANT, productKey: 'core' } }]);
  });
});
