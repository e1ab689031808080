import type { MigrationInterface } from 'typeorm';
import { compileFlag, type FlagDefinition } from '@flagship/flag-evaluation';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const ClauseContextKinds = MIGRATIONS.find((m) => m.name === 'ClauseContextKinds1763820000000')! as new () => MigrationInterface;

/** The migration on rules stored when every `/`-attribute was a reference (real Postgres). */
describe('the clause context kinds migration (ClauseContextKinds1763820000000) on stored rules', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('gives /attributes and /bucketBy contextKind user, so stored flags serve what they served; other rows and tenants untouched', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const tenant = async (name: string): Promise<string> => {
        const [{ id }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ($1, 'ops@acme.test') RETURNING id`, [name]);
        await runner.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production')`, [id]);
        return id;
      };
      const flag = async (tenantId: string, key: string, rules: unknown): Promise<string> => {
        const [{ id }] = await runner.query(
          `INSERT INTO flags (tenant_id, key, name, type, default_value, variations) VALUES ($1, $2, $2, 'string', '"none"', $3::jsonb) RETURNING id`,
          [tenantId, key, JSON.stringify([{ id: 'a', name: 'a', value: 'a', weight: 0 }, { id: 'b', name: 'b', value: 'b', weight: 0 }])],
        );
        await runner.query(`INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled, rules) VALUES ($1, $2, 'production', true, $3::jsonb)`, [tenantId, id, JSON.stringify(rules)]);
        return id;
      };
      const rulesOf = async (flagId: string) => (await runner.query(`SELECT rules FROM flag_environments WHERE flag_id = $1`, [flagId]))[0].rules;
      const serve = (rules: unknown, ctx: Record<string, unknown>) =>
        compileFlag({ key: 'f', type: 'string', defaultValue: 'none', enabled: true, variations: [{ id: 'a', name: 'a', value: 'a', weight: 0 }, { id: 'b', name: 'b', value: 'b', weight: 0 }], targets: [], rules, prerequisites: [] } as FlagDefinition).evaluate(ctx).value;

      const acme = await tenant('Acme');
      const globex = await tenant('Globex');
      const oldRules = [
        { id: 'city', clauses: [{ attribute: '/address/city', op: 'in', values: ['Oslo'] }], variationId: 'b' },
        { id: 'split', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], rollout: { bucketBy: '/org/id', variations: [{ variationId: 'a', weight: 1 }, { variationId: 'b', weight: 1 }] } },
      ];
      const plain = [{ id: 'plain', clauses: [{ attribute: 'country', op: 'in', values: ['/NO'] }], variationId: 'b' }];
      const nested = await flag(acme, 'nested', oldRules);
      const other = await flag(globex, 'other', oldRules);
      const untouched = await flag(acme, 'plain', plain);
      const ctx = { key: 'k', address: { city: 'Oslo' } };
      expect(serve(await rulesOf(nested), ctx)).toBe('none'); // read literally by today's evaluator

      await new ClauseContextKinds().up(runner);

      for (const id of [nested, other]) {
        const rules = await rulesOf(id);
        expect(rules[0].clauses[0]).toEqual({ attribute: '/address/city', contextKind: 'user', op: 'in', values: ['Oslo'] });
        expect(rules[1].clauses[0]).toEqual({ attribute: 'plan', op: 'in', values: ['pro'] });
        expect(rules[1].rollout).toMatchObject({ bucketBy: '/org/id', contextKind: 'user' });
        expect(serve(rules, ctx)).toBe('b');
      }
      expect(await rulesOf(untouched)).toEqual(plain);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
