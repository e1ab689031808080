import { DATA_SOURCE, type DataSource, MIGRATIONS } from '@flagship/persistence';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * The upgrade for existing clients (libs/persistence migration OAuthClientsAiInvoke): a client that
 * has called the gateway keeps working, every other client keeps only what it was given.
 */
describe('migration: ai:invoke for the clients that already called the gateway', () => {
  let f: ManagementApiFixture;
  let ds: DataSource;
  let ada: SignedUp;
  let bob: SignedUp;

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    ds = f.svc.app.get<DataSource>(DATA_SOURCE);
    ada = await f.signUp();
    bob = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  /** A client as an older release stored it (no scope check, `ai:invoke` unknown). */
  const oldClient = async (tenantId: string, clientId: string, scopes: string[], deleted = false) => {
    await ds.query(`INSERT INTO oauth_clients (tenant_id, client_id, name, secret_hash, scopes, deleted_at) VALUES ($1, $2, $2, 'x', $3, $4)`, [
      tenantId,
      clientId,
      scopes,
      deleted ? new Date() : null,
    ]);
  };
  const usedGateway = (tenantId: string, clientId: string) =>
    ds.query(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, completed_at) VALUES ($1, $2, 'core', 'inhouse', 'fake-chat-1', 'chat.completions', 'succeeded', now())`,
      [tenantId, clientId],
    );
  const scopesOf = async (clientId: string): Promise<string[]> =>
    ((await ds.query(`SELECT scopes FROM oauth_clients WHERE client_id = $1`, [clientId])) as Array<{ scopes: string[] }>)[0]!.scopes;

  it('adds ai:invoke to live clients with gateway usage in their own tenant only, once', async () => {
    await oldClient(ada.tenantId, 'ffc_mgReaderCaller00001', ['flags:read']);
    await oldClient(ada.tenantId, 'ffc_mgNoScopeCaller0001', []);
    await oldClient(ada.tenantId, 'ffc_mgReaderOnly0000001', ['flags:read']);
    await oldClient(ada.tenantId, 'ffc_mgNoScopeOnly000001', []);
    await oldClient(ada.tenantId, 'ffc_mgDeletedCaller0001', ['flags:read'], true);
    await oldClient(ada.tenantId, 'ffc_mgAlreadyInvoke0001', ['ai:invoke']);
    await oldClient(ada.tenantId, 'ffc_mgOtherTenantUse001', ['flags:read']);
    await usedGateway(ada.tenantId, 'ffc_mgReaderCaller00001');
    await usedGateway(ada.tenantId, 'ffc_mgNoScopeCaller0001');
    await usedGateway(ada.tenantId, 'ffc_mgDeletedCaller0001');
    await usedGateway(ada.tenantId, 'ffc_mgAlreadyInvoke0001');
    // A row of the same client id under another tenant does not count.
    await usedGateway(bob.tenantId, 'ffc_mgOtherTenantUse001');

    const migration = MIGRATIONS.find((m) => m.name === 'OAuthClientsAiInvoke1763810000000')!;
    const runner = { query: (sql: string) => ds.query(sql) } as unknown as Parameters<InstanceType<typeof migration>['up']>[0];
    await new migration().up(runner);
    await new migration().up(runner);

    expect(await scopesOf('ffc_mgReaderCaller00001')).toEqual(['flags:read', 'ai:invoke']);
    expect(await scopesOf('ffc_mgNoScopeCaller0001')).toEqual(['ai:invoke']);
    expect(await scopesOf('ffc_mgReaderOnly0000001')).toEqual(['flags:read']);
    expect(await scopesOf('ffc_mgNoScopeOnly000001')).toEqual([]);
    expect(await scopesOf('ffc_mgDeletedCaller0001')).toEqual(['flags:read']);
    expect(await scopesOf('ffc_mgAlreadyInvoke0001')).toEqual(['ai:invoke']);
    expect(await scopesOf('ffc_mgOtherTenantUse001')).toEqual(['flags:read']);
  });
});
