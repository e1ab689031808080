import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * A flag's `clientSideAvailability` (which client-side keys of orep-server may evaluate it) through
 * the API, Postgres and the export orep-server reads: server-only by default, written by create,
 * PATCH and LaunchDarkly's import (its own field, or the legacy `clientSide`), shared by every
 * environment, refused when it is not two booleans.
 */
describe('clientSideAvailability (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  const as = (headers?: Record<string, string>) => ({ token: owner.idToken, tenant: owner.tenantId, headers });
  const both = { usingEnvironmentId: true, usingMobileKey: true };
  const none = { usingEnvironmentId: false, usingMobileKey: false };
  const exported = async (key: string, environment = 'production') =>
    ((await f.call('GET', '/api/flags/export', as({ 'x-environment': environment }))).body.flags as Array<{ key: string; clientSideAvailability?: unknown }>).find((d) => d.key === key);

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    owner = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('a new flag is server-only unless created available; the export carries it only when available', async () => {
    const plain = await f.call('POST', '/api/flags', { ...as(), json: { key: 'server-only', name: 'S', type: 'boolean', defaultValue: false } });
    expect([plain.status, plain.body.clientSideAvailability]).toEqual([201, none]);
    const browser = await f.call('POST', '/api/flags', {
      ...as(),
      json: { key: 'browser-banner', name: 'B', type: 'boolean', defaultValue: false, clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false } },
    });
    expect([browser.status, browser.body.clientSideAvailability]).toEqual([201, { usingEnvironmentId: true, usingMobileKey: false }]);
    expect((await exported('server-only'))?.clientSideAvailability).toBeUndefined();
    expect((await exported('browser-banner'))?.clientSideAvailability).toEqual({ usingEnvironmentId: true, usingMobileKey: false });
  });

  it('PATCH sets it for every environment (it is global, as in LaunchDarkly), bumps the version and is audited', async () => {
    const before = await f.call('GET', '/api/flags/server-only', as());
    const res = await f.call('PATCH', '/api/flags/server-only', { ...as(), json: { clientSideAvailability: both }, headers: { 'if-match': before.headers.get('etag')! } });
    expect([res.status, res.body.clientSideAvailability]).toEqual([200, both]);
    expect(res.body.version).not.toBe(before.body.version);
    expect((await f.call('GET', '/api/flags/server-only', as({ 'x-environment': 'staging' }))).body.clientSideAvailability).toEqual(both);
    expect((await exported('server-only', 'development'))?.clientSideAvailability).toEqual(both);
    const audit = await f.sql<{ changes: Record<string, unknown> }>(`SELECT changes FROM flag_audit WHERE tenant_id = $1 AND flag_key = 'server-only' AND action = 'update'`, [owner.tenantId]);
    expect(audit.rows.map((a) => a.changes['clientSideAvailability'])).toEqual([{ from: none, to: both }]);
  });

  it.each([
    ['not an object', 'yes', 'clientSideAvailability'],
    ['a field missing', { usingEnvironmentId: true }, 'clientSideAvailability.usingMobileKey'],
    ['a string for a boolean', { usingEnvironmentId: 'true', usingMobileKey: false }, 'clientSideAvailability.usingEnvironmentId'],
    ['an unknown field', { usingEnvironmentId: true, usingMobileKey: false, everywhere: true }, 'clientSideAvailability.everywhere'],
    ['null', null, 'clientSideAvailability'],
  ])('is refused with a 422 naming the field when it is %s, and nothing changes', async (_name, value, path) => {
    const res = await f.call('PATCH', '/api/flags/browser-banner', { ...as(), json: { clientSideAvailability: value } });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Object.keys(res.body.errors)).toContain(path);
    expect((await f.call('GET', '/api/flags/browser-banner', as())).body.clientSideAvailability).toEqual({ usingEnvironmentId: true, usingMobileKey: false });
  });

  it("the import keeps LaunchDarkly's clientSideAvailability, reads the legacy clientSide, and leaves a flag without either as it is", async () => {
    const ld = (extra: Record<string, unknown>) => ({ variations: [true, false], offVariation: 1, fallthrough: { variation: 0 }, on: true, ...extra });
    const res = await f.call('POST', '/api/flags/import', {
      ...as(),
      json: {
        flags: {
          'ld-browser': ld({ clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false }, clientSide: true }),
          'ld-mobile': ld({ clientSideAvailability: { usingMobileKey: true } }),
          'ld-legacy': ld({ clientSide: true }),
          'ld-server': ld({ clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false }, clientSide: false }),
          'ld-neither': ld({}),
          // An existing flag the data says nothing about keeps what it has.
          'browser-banner': ld({}),
          // One it does say something about is changed everywhere, as a PATCH would.
          'server-only': ld({ clientSideAvailability: { usingEnvironmentId: false, usingMobileKey: false } }),
        },
      },
    });
    expect(res.status).toBe(200);
    const availability = Object.fromEntries((res.body.flags as Array<{ key: string; clientSideAvailability: unknown }>).map((x) => [x.key, x.clientSideAvailability]));
    expect(availability).toEqual({
      'ld-browser': { usingEnvironmentId: true, usingMobileKey: false },
      'ld-mobile': { usingEnvironmentId: false, usingMobileKey: true },
      'ld-legacy': { usingEnvironmentId: true, usingMobileKey: true },
      'ld-server': none,
      'ld-neither': none,
      'browser-banner': { usingEnvironmentId: true, usingMobileKey: false },
      'server-only': none,
    });
    expect((await f.call('GET', '/api/flags/server-only', as({ 'x-environment': 'staging' }))).body.clientSideAvailability).toEqual(none);
    expect((await exported('ld-legacy', 'staging'))?.clientSideAvailability).toEqual({ usingEnvironmentId: true, usingMobileKey: true });
  });

  it('an import whose clientSideAvailability is malformed writes nothing and names the place', async () => {
    const res = await f.call('POST', '/api/flags/import', {
      ...as(),
      json: { flags: { 'ld-bad': { variations: [true, false], fallthrough: { variation: 0 }, clientSideAvailability: { usingEnvironmentId: 'yes' } } } },
    });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({ 'flags.ld-bad.clientSideAvailability.usingEnvironmentId': 'must be a boolean' });
    expect((await f.call('GET', '/api/flags/ld-bad', as())).status).toBe(404);
  });
});
