import type { MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const AgentEndpoints = MIGRATIONS.find((m) => m.name === 'UsageLedgerAgentEndpoints1763850000000')! as new () => MigrationInterface;

/** The ledger's endpoint check, widened for /v1/messages and /v1/responses, and narrowed back (real Postgres). */
describe('the usage ledger agent endpoints migration (UsageLedgerAgentEndpoints1763850000000)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('takes rows of messages and responses and nothing else; down records them as chat.completions and narrows the check again', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const [{ id: tenant }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
      const row = (endpoint: string) =>
        runner.query(`INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint) VALUES ($1, 'c', 'core', 'inhouse', 'm', $2) RETURNING id`, [tenant, endpoint]);
      await row('messages');
      await row('responses');
      await row('chat.completions');
      await expect(row('completions')).rejects.toThrow(/usage_ledger_endpoint_check/);

      await new AgentEndpoints().down(runner);
      const endpoints = (await runner.query(`SELECT endpoint FROM usage_ledger WHERE tenant_id = $1 ORDER BY endpoint`, [tenant])).map((r: { endpoint: string }) => r.endpoint);
      expect(endpoints).toEqual(['chat.completions', 'chat.completions', 'chat.completions']);
      await expect(row('messages')).rejects.toThrow(/usage_ledger_endpoint_check/);

      await new AgentEndpoints().up(runner);
      await expect(row('messages')).resolves.toHaveLength(1);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
