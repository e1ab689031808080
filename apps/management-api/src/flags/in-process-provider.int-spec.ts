/**
 * The SDK's in-process OpenFeature provider against a real management-api (real HTTP, Postgres,
 * Redis), through `@openfeature/server-sdk` as an application uses it, the stream carried by a TCP
 * proxy the test can cut.
 */
import { type Client, type EvaluationContext, type EvaluationDetails, type JsonValue, OpenFeature, ProviderEvents, ProviderStatus } from '@openfeature/server-sdk';
import { FlagshipInProcessProvider } from '@flagship/sdk';
import { http, TcpProxy } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

describe('FlagshipInProcessProvider (OpenFeature server SDK, real management-api)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let proxy: TcpProxy;
  let reader: { clientId: string; clientSecret: string };
  let client: Client;
  let provider: FlagshipInProcessProvider;
  const heard: Array<{ type: string; flagsChanged?: string[] }> = [];

  const as = (u: SignedUp) => ({ token: u.idToken, tenant: u.tenantId });
  const patch = async (key: string, json: unknown) => {
    const res = await f.call('PATCH', `/api/flags/${key}`, { ...as(owner), json });
    if (res.status !== 200) throw new Error(`PATCH ${key}: ${res.status} ${res.text}`);
    return res.body;
  };
  const create = async (json: unknown) => {
    const res = await f.call('POST', '/api/flags', { ...as(owner), json });
    if (res.status !== 201) throw new Error(`POST: ${res.status} ${res.text}`);
    return res.body as { variations: Array<{ id: string; name: string }> };
  };
  const oauthClient = async (scopes: string[]) => {
    const res = await f.call('POST', '/api/oauth/clients', { ...as(owner), json: { name: `in-process ${scopes.join(' ')}`, scopes } });
    if (res.status !== 201) throw new Error(`client: ${res.status} ${res.text}`);
    return { clientId: res.body.clientId as string, clientSecret: res.body.clientSecret as string };
  };
  async function waitFor(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; events: ${JSON.stringify(heard)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ RATE_LIMIT_FREE: '100000', FLAG_STREAM_HEARTBEAT_SECONDS: '0.5', FLAG_STREAM_MAX_AGE_SECONDS: '2' });
    owner = await f.signUp();
    proxy = await TcpProxy.start(f.url);

    const checkout = await create({ key: 'checkout', name: 'checkout', type: 'boolean', defaultValue: false });
    const [on, off] = checkout.variations.map((v) => v.id);
    await patch('checkout', {
      enabled: true,
      targets: [{ variationId: off, values: ['user-3', 'user-7'] }],
      rules: [
        { id: 'nordics', clauses: [{ attribute: 'country', op: 'in', values: ['NO', 'SE'] }], variationId: on },
        { id: 'half-of-pro', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], rollout: { variations: [{ variationId: on, weight: 1 }, { variationId: off, weight: 1 }] } },
      ],
    });
    const banner = await create({
      key: 'banner',
      name: 'banner',
      type: 'string',
      defaultValue: 'blue',
      flag_variations: [
        { name: 'blue', value: 'blue', weight: 60 },
        { name: 'green', value: 'green', weight: 30 },
        { name: 'red', value: 'red', weight: 10 },
      ],
    });
    await patch('banner', { enabled: true, rules: [{ id: 'adults', clauses: [{ attribute: 'age', op: 'greaterThanOrEqual', values: [18] }, { attribute: 'email', op: 'endsWith', values: ['@example.org'] }], variationId: banner.variations[2]!.id }] });
    const limit = await create({ key: 'limit', name: 'limit', type: 'number', defaultValue: 10, flag_variations: [{ name: 'ten', value: 10 }, { name: 'hundred', value: 100 }] });
    await patch('limit', {
      enabled: true,
      prerequisites: [{ key: 'checkout', variationId: on }],
      rules: [{ id: 'semver', clauses: [{ attribute: 'appVersion', op: 'semVerGreaterThan', values: ['2.0.0'] }], variationId: limit.variations[1]!.id }],
    });
    await create({ key: 'config', name: 'config', type: 'json', defaultValue: { theme: 'light' } });

    reader = await oauthClient(['flags:read']);
    provider = new FlagshipInProcessProvider({ baseUrl: `http://127.0.0.1:${proxy.port}`, auth: reader, reconnectDelayMs: 50, maxReconnectDelayMs: 200, inactivityTimeoutMs: 3000 });
    await OpenFeature.setProviderAndWait('in-process', provider);
    client = OpenFeature.getClient('in-process');
    for (const type of [ProviderEvents.ConfigurationChanged, ProviderEvents.Stale, ProviderEvents.Ready, ProviderEvents.Error]) {
      client.addHandler(type, (details) => heard.push({ type, flagsChanged: (details as { flagsChanged?: string[] } | undefined)?.flagsChanged }));
    }
  }, 60_000);

  afterAll(async () => {
    await OpenFeature.close();
    await proxy?.cut();
    await f?.stop();
  });

  const contexts = Array.from({ length: 40 }, (_, i) => ({
    targetingKey: `user-${i}`,
    country: ['NO', 'SE', 'DE', 'US'][i % 4]!,
    plan: i % 3 === 0 ? 'pro' : 'free',
    age: 10 + i,
    email: i % 2 === 0 ? `u${i}@example.org` : `u${i}@example.com`,
    appVersion: ['1.9.0', '2.0.0', '2.1.0', '10.0.0'][i % 4]!,
  }));

  async function local(key: string, ctx: (typeof contexts)[number]): Promise<EvaluationDetails<JsonValue>> {
    switch (key) {
      case 'checkout':
        return client.getBooleanDetails(key, false, ctx);
      case 'banner':
        return client.getStringDetails(key, 'none', ctx);
      case 'limit':
        return client.getNumberDetails(key, -1, ctx);
      default:
        return client.getObjectDetails(key, {}, ctx);
    }
  }

  /** The remote answer's reason as OpenFeature names it: a rollout's SPLIT is only in the local answer, so both are allowed there. */
  const OPENFEATURE_REASONS: Record<string, string[]> = {
    OFF: ['DISABLED'],
    TARGET_MATCH: ['TARGETING_MATCH'],
    RULE_MATCH: ['TARGETING_MATCH', 'SPLIT'],
    FALLTHROUGH: ['DEFAULT', 'SPLIT'],
    PREREQUISITE_FAILED: ['PREREQUISITE_FAILED'],
  };

  it('is READY and its evaluations agree with POST /api/flags/{key}/evaluate for the same contexts', async () => {
    expect(client.providerStatus).toBe(ProviderStatus.READY);
    const reasons = new Set<string>();
    for (const key of ['checkout', 'banner', 'limit', 'config']) {
      for (const ctx of contexts) {
        const { targetingKey, ...attributes } = ctx;
        const remote = await f.call('POST', `/api/flags/${key}/evaluate`, { ...as(owner), json: { userId: targetingKey, attributes } });
        expect(remote.status).toBe(200);
        const mine = await local(key, ctx);
        expect({ key, user: targetingKey, value: mine.value, variant: mine.variant }).toEqual({ key, user: targetingKey, value: remote.body.value, variant: remote.body.variationId });
        expect(OPENFEATURE_REASONS[remote.body.reason]).toContain(mine.reason);
        expect(mine.errorCode).toBeUndefined();
        reasons.add(`${remote.body.reason}/${mine.reason}`);
      }
    }
    // The set exercised targets, rules, rollouts, prerequisites and an off flag.
    expect([...reasons].sort()).toEqual(
      expect.arrayContaining(['FALLTHROUGH/SPLIT', 'OFF/DISABLED', 'PREREQUISITE_FAILED/PREREQUISITE_FAILED', 'RULE_MATCH/SPLIT', 'RULE_MATCH/TARGETING_MATCH', 'TARGET_MATCH/TARGETING_MATCH']),
    );
    const missing = await client.getBooleanDetails('nope', true, contexts[0]);
    expect([missing.value, missing.errorCode]).toEqual([true, 'FLAG_NOT_FOUND']);
    const wrongType = await client.getNumberDetails('checkout', 5, contexts[0]);
    expect([wrongType.value, wrongType.errorCode]).toEqual([5, 'TYPE_MISMATCH']);
    const noKey = await client.getBooleanDetails('checkout', false, { country: 'NO' });
    expect(noKey.errorCode).toBe('TARGETING_KEY_MISSING');
  });

  it('hears a PATCH: CONFIGURATION_CHANGED naming the flag, and the evaluation changes', async () => {
    const germany = contexts[2]!; // DE, free: no rule matches
    expect((await client.getBooleanDetails('checkout', true, germany)).reason).toBe('DEFAULT');
    heard.length = 0;
    const on = (await f.call('GET', '/api/flags/checkout', as(owner))).body.variations[0].id;
    await patch('checkout', { rules: [{ id: 'dach', clauses: [{ attribute: 'country', op: 'in', values: ['DE'] }], variationId: on }] });
    await waitFor('the change', () => heard.some((e) => e.type === ProviderEvents.ConfigurationChanged && e.flagsChanged?.includes('checkout') === true));
    const after = await client.getBooleanDetails('checkout', false, germany);
    expect([after.value, after.reason, after.flagMetadata['ruleId']]).toEqual([true, 'TARGETING_MATCH', 'dach']);

    heard.length = 0;
    expect((await f.call('DELETE', '/api/flags/config', as(owner))).status).toBe(204);
    await waitFor('the delete', () => heard.some((e) => e.flagsChanged?.includes('config') === true));
    expect((await client.getObjectDetails('config', { gone: true }, germany)).errorCode).toBe('FLAG_NOT_FOUND');
  });

  it('evaluates segmentMatch and multi-kind contexts in process; a segment change is heard and applied', async () => {
    const segment = await f.call('POST', '/api/segments', { ...as(owner), json: { key: 'key-accounts', name: 'Key accounts', included: ['user-1'], includedContexts: [{ contextKind: 'organization', values: ['acme'] }] } });
    expect(segment.status).toBe(201);
    heard.length = 0;
    const b2b = await create({ key: 'b2b', name: 'b2b', type: 'boolean', defaultValue: false });
    const [on] = b2b.variations.map((v) => v.id);
    // The creation is heard first (off), so the wait below is for the rules.
    await waitFor('the new flag', () => heard.some((e) => e.flagsChanged?.includes('b2b') === true));
    heard.length = 0;
    await patch('b2b', {
      enabled: true,
      rules: [
        { id: 'key-accounts', clauses: [{ attribute: 'key', op: 'segmentMatch', values: ['key-accounts'] }], variationId: on },
        { id: 'enterprise', clauses: [{ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['enterprise'] }], variationId: on },
      ],
    });
    await waitFor('the flag', () => heard.some((e) => e.flagsChanged?.includes('b2b') === true));
    const answer = async (ctx: EvaluationContext) => {
      const d = await client.getBooleanDetails('b2b', false, ctx);
      return [d.value, d.flagMetadata['ruleId'] ?? d.reason];
    };
    // Single user contexts agree with the seed's evaluate route (user contexts only there).
    for (const userId of ['user-1', 'user-2']) {
      const remote = await f.call('POST', '/api/flags/b2b/evaluate', { ...as(owner), json: { userId } });
      expect(await answer({ targetingKey: userId })).toEqual([remote.body.value, remote.body.ruleId ?? 'DEFAULT']);
    }
    expect(await answer({ targetingKey: 'user-1' })).toEqual([true, 'key-accounts']);
    expect(await answer({ kind: 'organization', targetingKey: 'acme' })).toEqual([true, 'key-accounts']);
    expect(await answer({ kind: 'multi', user: { targetingKey: 'user-2' }, organization: { targetingKey: 'globex', plan: 'enterprise' } })).toEqual([true, 'enterprise']);
    expect(await answer({ kind: 'multi', user: { targetingKey: 'user-2' }, organization: { targetingKey: 'globex', plan: 'free' } })).toEqual([false, 'DEFAULT']);
    const malformed = await client.getBooleanDetails('b2b', false, { kind: 'multi', user: { name: 'no key' } });
    expect([malformed.errorCode, malformed.errorMessage]).toEqual(['INVALID_CONTEXT', expect.stringContaining('context.user.key')]);

    // A change to the segment alone reaches the provider (a patch with the segment) and changes its answers.
    heard.length = 0;
    const moved = await f.call('PATCH', '/api/segments/key-accounts', { ...as(owner), json: { included: ['user-2'], includedContexts: [] } });
    expect(moved.status).toBe(200);
    await waitFor('the segment change', () => heard.some((e) => e.flagsChanged?.includes('b2b') === true));
    expect(await answer({ targetingKey: 'user-1' })).toEqual([false, 'DEFAULT']);
    expect(await answer({ targetingKey: 'user-2' })).toEqual([true, 'key-accounts']);
    expect(await answer({ kind: 'organization', targetingKey: 'acme' })).toEqual([false, 'DEFAULT']);

    // A provider started now receives the segment in its put.
    const fresh = new FlagshipInProcessProvider({ baseUrl: f.url, auth: reader });
    await OpenFeature.setProviderAndWait('fresh', fresh);
    const d = await OpenFeature.getClient('fresh').getBooleanDetails('b2b', false, { kind: 'multi', user: { targetingKey: 'user-2' } });
    expect([d.value, d.flagMetadata['ruleId']]).toEqual([true, 'key-accounts']);
  }, 30_000);

  it('goes STALE when the stream breaks, keeps answering from the last good flags, and recovers with what changed meanwhile', async () => {
    const nordic = contexts[0]!; // NO
    expect((await client.getBooleanValue('checkout', false, nordic))).toBe(false); // rules replaced above: only DE matches now
    heard.length = 0;
    await proxy.cut();
    await waitFor('STALE', () => heard.some((e) => e.type === ProviderEvents.Stale));
    expect(client.providerStatus).toBe(ProviderStatus.STALE);
    // The last good flags still answer.
    const stale = await client.getBooleanDetails('checkout', true, contexts[2]!);
    expect([stale.value, stale.errorCode]).toEqual([true, undefined]);

    const on = (await f.call('GET', '/api/flags/checkout', as(owner))).body.variations[0].id;
    await patch('checkout', { rules: [{ id: 'norway', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: on }] });
    await proxy.restore();
    await waitFor('READY again', () => heard.some((e) => e.type === ProviderEvents.Ready));
    await waitFor('the change made while away', () => heard.some((e) => e.flagsChanged?.includes('checkout') === true));
    expect(client.providerStatus).toBe(ProviderStatus.READY);
    expect(await client.getBooleanValue('checkout', false, nordic)).toBe(true);
  }, 30_000);

  it('reconnects and resumes when the server ends a stream at its age (FLAG_STREAM_MAX_AGE_SECONDS), without going STALE', async () => {
    heard.length = 0;
    const before = proxy.connections;
    await new Promise((r) => setTimeout(r, 4500));
    expect(proxy.connections).toBeGreaterThan(before);
    expect(heard.filter((e) => e.type !== ProviderEvents.ConfigurationChanged)).toEqual([]);
    expect(client.providerStatus).toBe(ProviderStatus.READY);
    // Still current after the reconnects.
    await patch('checkout', { enabled: false });
    await waitFor('the change after reconnecting', () => heard.some((e) => e.flagsChanged?.includes('checkout') === true));
    expect((await client.getBooleanDetails('checkout', true, contexts[0]!)).reason).toBe('DISABLED');
  }, 30_000);

  it('emits ERROR once its client is deleted (by the stream\'s age at the latest) and keeps answering from its last good flags', async () => {
    const doomed = await oauthClient(['flags:read']);
    const p = new FlagshipInProcessProvider({ baseUrl: f.url, auth: doomed, reconnectDelayMs: 50, maxReconnectDelayMs: 200 });
    await OpenFeature.setProviderAndWait('doomed', p);
    const c = OpenFeature.getClient('doomed');
    const errors: string[] = [];
    c.addHandler(ProviderEvents.Error, (details) => errors.push(details?.message ?? ''));
    const before = await c.getBooleanDetails('checkout', true, contexts[0]!);
    expect(before.errorCode).toBeUndefined();
    expect((await f.call('DELETE', `/api/oauth/clients/${doomed.clientId}`, as(owner))).status).toBe(204);
    await waitFor('ERROR', () => errors.length > 0);
    expect(c.providerStatus).toBe(ProviderStatus.ERROR);
    const after = await c.getBooleanDetails('checkout', true, contexts[0]!);
    expect([after.value, after.variant, after.errorCode]).toEqual([before.value, before.variant, undefined]);
  }, 20_000);

  it('a client without flags:read is refused (403): setProviderAndWait fails and the provider is in ERROR', async () => {
    const evaluator = await oauthClient(['flags:evaluate']);
    const refused = new FlagshipInProcessProvider({ baseUrl: f.url, auth: evaluator, reconnectDelayMs: 50, maxReconnectDelayMs: 200 });
    await expect(OpenFeature.setProviderAndWait('refused', refused)).rejects.toMatchObject({ status: 403 });
    const c = OpenFeature.getClient('refused');
    expect(c.providerStatus).toBe(ProviderStatus.ERROR);
    const answer = await c.getBooleanDetails('checkout', true, contexts[0]!);
    expect([answer.value, answer.reason]).toEqual([true, 'ERROR']);
    // The same credentials are refused by the stream itself, as the SDK saw.
    const token = await http(`${f.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: evaluator.clientId, client_secret: evaluator.clientSecret }).toString(),
    });
    const res = await fetch(`${f.url}/api/flag-stream`, { headers: { authorization: `Bearer ${(token.body as { access_token: string }).access_token}` } });
    expect(res.status).toBe(403);
    await res.body?.cancel();
  });
});
