import { DATA_SOURCE, type DataSource } from '@flagship/persistence';
import { http } from '@flagship/testing';
import { DEMO_CLIENT_ID, DEMO_CREDITS, DEMO_TENANT_ID, seedDemo } from './demo-seed';
import { ManagementApiFixture } from './testing/management-api.fixture';

/** The quickstart's demo data: what `npm start` prints must work, and a second run must not add money. */
describe('demo seed', () => {
  let f: ManagementApiFixture;
  let ds: DataSource;
  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    ds = f.svc.app.get<DataSource>(DATA_SOURCE);
  });
  afterAll(async () => f.stop());

  const token = (clientId: string, clientSecret: string) =>
    http(`${f.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }).toString(),
    });

  it('gives the demo tenant core enterprise, credits once, and a client whose printed secret works (rotated each run)', async () => {
    const first = await seedDemo(f.svc.app);
    expect(first).toMatchObject({ created: true, creditsGranted: true, clientId: DEMO_CLIENT_ID });
    const second = await seedDemo(f.svc.app);
    expect(second).toMatchObject({ created: false, creditsGranted: false, clientId: DEMO_CLIENT_ID });
    expect(second.clientSecret).not.toBe(first.clientSecret);

    const [balance] = await ds.query(`SELECT balance::int AS balance, reserved::int AS reserved FROM credit_balances WHERE tenant_id = $1`, [DEMO_TENANT_ID]);
    expect(balance).toEqual({ balance: DEMO_CREDITS, reserved: 0 });
    const entitlements = await ds.query(`SELECT product_key, tier, valid_until FROM entitlements WHERE tenant_id = $1`, [DEMO_TENANT_ID]);
    expect(entitlements).toEqual([{ product_key: 'core', tier: 'enterprise', valid_until: null }]);

    const ok = await token(second.clientId, second.clientSecret);
    expect(ok.status).toBe(200);
    const claims = JSON.parse(Buffer.from((ok.body as { access_token: string }).access_token.split('.')[1]!, 'base64url').toString());
    expect(claims).toMatchObject({ client_id: DEMO_CLIENT_ID, tenant_id: DEMO_TENANT_ID });
    // The quickstart's first gateway call needs the gateway scope.
    expect((claims as { scope: string }).scope.split(' ')).toContain('ai:invoke');
    expect((await token(first.clientId, first.clientSecret)).status).toBe(401);
  });
});
