import { OFREPProvider } from '@openfeature/ofrep-provider';
import { ErrorCode, OpenFeature } from '@openfeature/server-sdk';
import { SecretStore } from '@flagship/config';
import type { RunningApp } from '@flagship/service-kit';
import { FakeSecretsManager, http, waitFor } from '@flagship/testing';
import { RawSse } from '../push/sse-client.fixture';
import { TenantFlagsFixture } from '../testing/tenant-flags.fixture';

/**
 * Client-side keys through the real app in Postgres mode (flags written with SQL in this file's own
 * database, announced on Redis as management-api announces them), driven by OpenFeature's server
 * SDK and OFREP provider and by raw HTTP: a browser key evaluates the flags marked available to
 * browsers and is told every other flag does not exist, alone and in bulk; its push stream ends
 * when its URL token expires; and a key rotated out of the Secrets Manager secret (the fake, through
 * the real AWS SDK) is refused and its streams end, with no restart.
 */

const TOKEN = 'client-keys-server-token-1';
const BROWSER = 'pk_browser_key_000000000001';
const BROWSER_NEXT = 'pk_browser_key_000000000002';
const MOBILE = 'mob_key_00000000000000000001';
const TENANT = '5b1d7c2e-3f4a-4b6c-8d9e-0a1b2c3d4e5f';
const context = { targetingKey: 'visitor-1' };

jest.setTimeout(30000);

describe('client-side keys (real Postgres, Redis, OpenFeature)', () => {
  let f: TenantFlagsFixture;

  const startOrep = async (extra: NodeJS.ProcessEnv = {}, secrets?: SecretStore): Promise<RunningApp> => {
    const app = await f.startOrep({ OREP_AUTH_TOKEN: TOKEN, OREP_CLIENT_KEYS: BROWSER, OREP_MOBILE_KEYS: MOBILE, ...extra }, secrets);
    await f.subscribed(app);
    return app;
  };

  /** A number flag available to `usingEnvironmentId` / `usingMobileKey`, announced. */
  const writeFlag = async (key: string, value: number, availability: { usingEnvironmentId: boolean; usingMobileKey: boolean }) => {
    await f.writeNumberFlag(key, value, false);
    await f.db.query(`UPDATE flags SET client_side_availability = $3::jsonb, version = version + 1, updated_at = clock_timestamp() WHERE tenant_id = $1 AND key = $2`, [
      TENANT,
      key,
      JSON.stringify(availability),
    ]);
    await f.announce(key);
  };

  const bulk = (app: RunningApp, key: string, headers: Record<string, string> = {}) =>
    http(`${app.url}/ofrep/v1/evaluate/flags`, { method: 'POST', json: { context }, headers: { authorization: `Bearer ${key}`, ...headers } });
  const keysOf = (res: { body: unknown }) => ((res.body as { flags: Array<{ key: string }> }).flags ?? []).map((f) => f.key).sort();
  const streamUrl = (res: { body: unknown }) => (res.body as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url;

  beforeAll(async () => {
    f = await TenantFlagsFixture.start(TENANT);
    await writeFlag('banner', 1, { usingEnvironmentId: true, usingMobileKey: false });
    await writeFlag('app-rating', 2, { usingEnvironmentId: false, usingMobileKey: true });
    await writeFlag('pricing', 3, { usingEnvironmentId: false, usingMobileKey: false });
  });

  afterAll(async () => {
    await OpenFeature.close();
    await f?.close();
  });

  describe('what each key evaluates', () => {
    let app: RunningApp;

    beforeAll(async () => {
      app = await startOrep();
      await OpenFeature.setProviderAndWait('browser', new OFREPProvider({ baseUrl: app.url, headers: [['Authorization', `Bearer ${BROWSER}`]] }));
      await OpenFeature.setProviderAndWait('mobile', new OFREPProvider({ baseUrl: app.url, headers: [['X-API-Key', MOBILE]] }));
      await OpenFeature.setProviderAndWait('server', new OFREPProvider({ baseUrl: app.url, headers: [['Authorization', `Bearer ${TOKEN}`]] }));
    });

    it("OpenFeature's provider with a browser key: the browser flag evaluates, every other flag is FLAG_NOT_FOUND", async () => {
      const browser = OpenFeature.getClient('browser');
      expect(await browser.getNumberDetails('banner', 0, context)).toMatchObject({ value: 1, reason: 'DEFAULT' });
      expect(await browser.getNumberDetails('pricing', -1, context)).toMatchObject({ value: -1, reason: 'ERROR', errorCode: ErrorCode.FLAG_NOT_FOUND });
      expect(await browser.getNumberDetails('app-rating', -1, context)).toMatchObject({ value: -1, errorCode: ErrorCode.FLAG_NOT_FOUND });
      const mobile = OpenFeature.getClient('mobile');
      expect(await mobile.getNumberDetails('app-rating', 0, context)).toMatchObject({ value: 2, reason: 'DEFAULT' });
      expect(await mobile.getNumberDetails('banner', -1, context)).toMatchObject({ value: -1, errorCode: ErrorCode.FLAG_NOT_FOUND });
      const server = OpenFeature.getClient('server');
      expect(await Promise.all(['banner', 'app-rating', 'pricing'].map((k) => server.getNumberValue(k, 0, context)))).toEqual([1, 2, 3]);
    });

    it('a server-only flag answers a browser key exactly as a flag that does not exist', async () => {
      const one = (key: string, flag: string) => http(`${app.url}/ofrep/v1/evaluate/flags/${flag}`, { method: 'POST', json: { context }, headers: { authorization: `Bearer ${key}` } });
      const hidden = await one(BROWSER, 'pricing');
      const missing = await one(BROWSER, 'no-such-flag');
      expect([hidden.status, hidden.body]).toEqual([404, { key: 'pricing', errorCode: 'FLAG_NOT_FOUND', errorDetails: "no flag 'pricing'" }]);
      expect(missing.status).toBe(404);
      // The seed's evaluate route says the same.
      const seed = await http(`${app.url}/v1/flags/pricing/evaluate`, { method: 'POST', json: { defaultValue: 0, type: 'number', context }, headers: { authorization: `Bearer ${BROWSER}` } });
      expect(seed.body).toMatchObject({ value: 0, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    });

    it('in bulk: only the flags of the key kind, with an ETag and a stream URL of its own', async () => {
      const [browser, mobile, server] = await Promise.all([bulk(app, BROWSER), bulk(app, MOBILE), bulk(app, TOKEN)]);
      expect([keysOf(browser), keysOf(mobile), keysOf(server)]).toEqual([['banner'], ['app-rating'], ['app-rating', 'banner', 'pricing']]);
      const etags = [browser, mobile, server].map((r) => r.headers.get('etag'));
      expect(new Set(etags).size).toBe(3);
      expect((await bulk(app, BROWSER, { 'if-none-match': etags[0]! })).status).toBe(304);
      expect((await bulk(app, BROWSER, { 'if-none-match': etags[2]! })).status).toBe(200);
      // The browser's stream URL is its own: minted for its key, not the server token's.
      expect(streamUrl(browser)).toMatch(/\?token=\d+\.[\w-]{16}\.[\w-]{43}$/);
      expect(streamUrl(server)).toMatch(/\?token=\d+\.[\w-]{43}$/);
    });

    it('follows the flag: marked available, it appears to the browser key; unmarked, it is gone again', async () => {
      await writeFlag('pricing', 3, { usingEnvironmentId: true, usingMobileKey: false });
      await waitFor(async () => keysOf(await bulk(app, BROWSER)).includes('pricing'), 5000, 20);
      await writeFlag('pricing', 3, { usingEnvironmentId: false, usingMobileKey: false });
      await waitFor(async () => !keysOf(await bulk(app, BROWSER)).includes('pricing'), 5000, 20);
    });
  });

  it("a push stream ends when its URL token expires; its URL is then refused, and the next bulk answer names a new one", async () => {
    const app = await startOrep({ OREP_SSE_TOKEN_TTL_S: '2' });
    const first = await bulk(app, BROWSER);
    const url = streamUrl(first);
    const exp = Number(new URL(url).searchParams.get('token')!.split('.')[0]);
    const sse = await RawSse.open(url);
    expect(sse.status).toBe(200);
    await waitFor(async () => sse.ended, 5000, 20);
    // Ended at the expiry, not before it (the token lives 2 to 3 s here).
    expect(Date.now()).toBeGreaterThanOrEqual(exp * 1000);
    const again = await RawSse.open(url);
    again.close();
    expect(again.status).toBe(401);
    const fresh = await RawSse.open(streamUrl(await bulk(app, BROWSER)));
    expect(fresh.status).toBe(200);
    fresh.close();
  });

  describe('rotation through Secrets Manager, no restart', () => {
    let sm: FakeSecretsManager;
    let secrets: SecretStore;
    const saved = { id: process.env['AWS_ACCESS_KEY_ID'], key: process.env['AWS_SECRET_ACCESS_KEY'] };

    beforeAll(async () => {
      process.env['AWS_ACCESS_KEY_ID'] = 'AKIDEXAMPLE';
      process.env['AWS_SECRET_ACCESS_KEY'] = 'example';
      sm = await FakeSecretsManager.start();
      sm.put('flagship/orep', { OREP_CLIENT_KEYS: BROWSER });
      secrets = await SecretStore.create({ env: {}, secretId: 'flagship/orep', refreshSeconds: 1, endpoint: sm.url });
    });

    afterAll(async () => {
      secrets?.close();
      await sm?.close();
      for (const [name, value] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.key]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });

    it('a key rotated out is refused and every stream it opened ends; the new key works; a bad rotation keeps the keys in force', async () => {
      const app = await startOrep({ OREP_CLIENT_KEYS: '', OREP_MOBILE_KEYS: '' }, secrets);
      const byUrl = await RawSse.open(streamUrl(await bulk(app, BROWSER)));
      const byHeader = await RawSse.open(`${app.url}/ofrep/v1/events`, { authorization: `Bearer ${BROWSER}` });
      const server = await RawSse.open(`${app.url}/ofrep/v1/events`, { authorization: `Bearer ${TOKEN}` });
      expect([byUrl.status, byHeader.status, server.status]).toEqual([200, 200, 200]);

      // Overlap: both keys work while clients move to the new one.
      sm.put('flagship/orep', { OREP_CLIENT_KEYS: `${BROWSER},${BROWSER_NEXT}` });
      await waitFor(async () => (await bulk(app, BROWSER_NEXT)).status === 200, 10000, 100);
      expect((await bulk(app, BROWSER)).status).toBe(200);

      sm.put('flagship/orep', { OREP_CLIENT_KEYS: BROWSER_NEXT });
      await waitFor(async () => (await bulk(app, BROWSER)).status === 401, 10000, 100);
      await waitFor(async () => byUrl.ended && byHeader.ended, 2000, 20);
      expect(server.ended).toBe(false);
      expect(keysOf(await bulk(app, BROWSER_NEXT))).toEqual(['banner']);

      // A value that cannot be used is not put in force: browsers keep working.
      sm.put('flagship/orep', { OREP_CLIENT_KEYS: 'short' });
      const reads = sm.reads.length;
      await waitFor(async () => sm.reads.length >= reads + 2, 10000, 100);
      expect((await bulk(app, BROWSER_NEXT)).status).toBe(200);
      server.close();
    });
  });
});
